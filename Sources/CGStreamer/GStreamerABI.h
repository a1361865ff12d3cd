// What LazyGStreamer.c (opening GStreamer) and GStreamerWebRTCSession.c (a viewer's session) share: the
// types and constants below are GStreamer 1.22's and GLib's (gst/gstpad.h, gst/webrtc/webrtc_fwd.h,
// gobject/gsignal.h), declared here so that building camrec needs no GStreamer development package;
// every value is part of their stable ABI. Not in include/: Swift sees only CGStreamer.h.
#ifndef CAMREC_GSTREAMER_ABI_H
#define CAMREC_GSTREAMER_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int gboolean;
typedef unsigned long gulong;
typedef size_t GType;
typedef void (*GCallback)(void);
typedef struct { uint32_t domain; int code; char *message; } GError;
typedef struct GstElement GstElement;
typedef struct GstPad GstPad;
typedef struct GstCaps GstCaps;
typedef uint64_t GstClockTime;
// gst/gstminiobject.h and gst/gstbuffer.h: a buffer's timestamps are public fields (GST_BUFFER_PTS).
typedef struct {
    GType type;
    int refcount, lockstate;
    unsigned flags;
    void *copy, *dispose, *free;
    unsigned priv_uint;
    void *priv_pointer;
} GstMiniObject;
typedef struct {
    GstMiniObject mini_object;
    void *pool;
    GstClockTime pts, dts, duration;
    uint64_t offset, offset_end;
} GstBuffer;
typedef struct GstEvent GstEvent;
typedef struct GstStructure GstStructure;
typedef struct GstPromise GstPromise;
typedef struct GstSDPMessage GstSDPMessage;
typedef struct GstPadProbeInfo GstPadProbeInfo;
typedef struct { int type; GstSDPMessage *sdp; } GstWebRTCSessionDescription;
typedef int (*GstPadProbeCallback)(GstPad *, GstPadProbeInfo *, void *);

enum { GST_STATE_NULL = 1, GST_STATE_PLAYING = 4 };
enum { GST_PAD_PROBE_TYPE_EVENT_UPSTREAM = 1 << 7, GST_PAD_PROBE_OK = 1 };
enum { GST_PROMISE_RESULT_REPLIED = 2 };
enum { GST_WEBRTC_SDP_TYPE_OFFER = 1 };
enum { GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY = 2 };
enum { GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE = 2 };
enum { GST_WEBRTC_ICE_CONNECTION_STATE_FAILED = 4, GST_WEBRTC_ICE_CONNECTION_STATE_CLOSED = 6 };
enum { GST_WEBRTC_PEER_CONNECTION_STATE_FAILED = 4, GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED = 5 };
enum { G_SIGNAL_MATCH_DATA = 1 << 4 };
enum { GST_FLOW_OK = 0 };

// The functions looked up by camrec_webrtc_load, once; read by the session code after it.
struct camrec_gst_functions {
    void (*g_free)(void *);
    void (*g_error_free)(GError *);
    void (*g_object_set)(void *, const char *, ...);
    void (*g_object_get)(void *, const char *, ...);
    void (*g_object_unref)(void *);
    gulong (*g_signal_connect_data)(void *, const char *, GCallback, void *, void *, int);
    void (*g_signal_emit_by_name)(void *, const char *, ...);
    unsigned (*g_signal_handlers_disconnect_matched)(void *, int, unsigned, uint32_t, void *, void *, void *);
    gboolean (*gst_init_check)(int *, char ***, GError **);
    void *(*gst_element_factory_find)(const char *);
    void (*gst_object_unref)(void *);
    GstElement *(*gst_parse_launch)(const char *, GError **);
    GstElement *(*gst_bin_get_by_name)(GstElement *, const char *);
    GstClockTime (*gst_element_get_base_time)(GstElement *);
    void (*gst_pipeline_use_clock)(GstElement *, void *);
    void *(*gst_system_clock_obtain)(void);
    int (*gst_element_set_state)(GstElement *, int);
    GstPad *(*gst_element_get_static_pad)(GstElement *, const char *);
    gulong (*gst_pad_add_probe)(GstPad *, int, GstPadProbeCallback, void *, void *);
    GstEvent *(*gst_pad_probe_info_get_event)(GstPadProbeInfo *);
    const GstStructure *(*gst_event_get_structure)(GstEvent *);
    gboolean (*gst_structure_has_name)(const GstStructure *, const char *);
    gboolean (*gst_structure_has_field)(const GstStructure *, const char *);
    gboolean (*gst_structure_get)(const GstStructure *, const char *, ...);
    GstPromise *(*gst_promise_new)(void);
    int (*gst_promise_wait)(GstPromise *);
    const GstStructure *(*gst_promise_get_reply)(GstPromise *);
    void (*gst_mini_object_unref)(void *);
    GstCaps *(*gst_caps_from_string)(const char *);
    GstBuffer *(*gst_buffer_new_memdup)(const void *, size_t);
    int (*gst_app_src_push_buffer)(GstElement *, GstBuffer *);
    int (*gst_sdp_message_new_from_text)(const char *, GstSDPMessage **);
    char *(*gst_sdp_message_as_text)(const GstSDPMessage *);
    int (*gst_sdp_message_free)(GstSDPMessage *);
    GstWebRTCSessionDescription *(*gst_webrtc_session_description_new)(int, GstSDPMessage *);
    void (*gst_webrtc_session_description_free)(GstWebRTCSessionDescription *);
    GType (*gst_webrtc_session_description_get_type)(void);
    // libnice (gstreamer1.0-nice's libnice10), looked up at the first session: see camrec_webrtc_session_destroy.
    void (*nice_agent_remove_stream)(void *, unsigned);
};
extern struct camrec_gst_functions camrec_gst __attribute__((visibility("hidden")));

// An element a session needs, and the Debian package that has it.
struct needed_element { const char *element, *package; };

// Whether GStreamer has every element of `needed`; else 0, and the one line naming the first missing
// element (`purpose` after its name) and its package in `error`.
int camrec_gst_has_elements(const struct needed_element *needed, size_t count, const char *purpose, char *error, size_t size)
    __attribute__((visibility("hidden")));

#endif
