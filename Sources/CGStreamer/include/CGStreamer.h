#ifndef CAMREC_CGSTREAMER_H
#define CAMREC_CGSTREAMER_H

// WebRTC for `POST /whep`: GStreamer's webrtcbin (Debian's gstreamer1.0-plugins-bad, with
// gstreamer1.0-nice for ICE), opened on first use like libav*: camrec is not linked against GStreamer,
// so a recording without WebRTC viewers never maps it, and camrec runs where it is not installed.
// No GStreamer header is needed to build: the few types and calls used are declared in
// LazyGStreamer.c (checked against the 1.22 headers). GLib's variadic calls (g_object_set,
// g_signal_emit_by_name) and its signals stay on this side; Swift sees plain functions.
//
// One session per viewer: `appsrc ! rtph264pay config-interval=-1 aggregate-mode=zero-latency !
// webrtcbin`, fed the hub's H.264 access units as they are (never re-encoded), and when the recording has
// sound a second appsrc into the same webrtcbin: Opus packets through `rtpopuspay` (the recording's own,
// or camrec's one encode of an AAC recording's samples that every viewer shares), or, at AAC rates Opus
// does not take, the AAC through `faad ! audioconvert ! audioresample ! opusenc ! rtpopuspay`. Both are stamped with their capture time
// (CLOCK_MONOTONIC, GStreamer's system clock) so that the browser plays them in step.
#include <stddef.h>
#include <stdint.h>

// Opens the libraries and looks up every call (no gst_init): 1, or 0 with the one-line reason
// (the Debian packages to install) in `error`. Cheap; `--http` calls it at start to say whether WebRTC is on.
int camrec_webrtc_load(char *error, size_t size);

// gst_init once, and the elements a session needs (webrtcbin, nicesrc, rtph264pay, appsrc, the DTLS
// and SRTP ones): 1, or 0 with the reason in `error`. At the first viewer.
int camrec_webrtc_start(char *error, size_t size);

typedef struct camrec_webrtc_session camrec_webrtc_session;

enum { CAMREC_WEBRTC_SOUND_AAC = 1, CAMREC_WEBRTC_SOUND_OPUS = 2 };

// The recording's sound, for a viewer whose offer takes Opus.
typedef struct {
    // The offer's payload type for Opus.
    int payload_type;
    // CAMREC_WEBRTC_SOUND_AAC or CAMREC_WEBRTC_SOUND_OPUS (at most 2 channels).
    int codec;
    int rate, channels;
    // AAC: the AudioSpecificConfig in hex digits.
    const char *aac_configuration;
} camrec_webrtc_sound;

enum {
    // The viewer asked for a key frame (RTCP PLI or FIR, through webrtcbin's RTP session).
    CAMREC_WEBRTC_KEYFRAME_WANTED = 1,
    // ICE gathering is complete: the answer holds every local candidate.
    CAMREC_WEBRTC_GATHERED = 2,
    // ICE or the peer connection failed or closed: the session is over.
    CAMREC_WEBRTC_FAILED = 3,
};

// Called on a GStreamer thread, with the session's lock held: it must return at once and must not call
// back into the session (no destroy from inside it).
typedef void (*camrec_webrtc_event_handler)(void *context, int event);

// A session answering `offer` (SDP text, already checked and with its H.264 format's fmtp saying the
// stream's profile-level-id) with H.264 on `payload_type`, and the sound as Opus when `sound` is not NULL
// (the offer's first m-line is the video, its second the audio); `stun`/`turn` are URLs for webrtcbin's
// stun-server/turn-server or NULL. Running (PLAYING) and gathering candidates when it returns; NULL
// with the reason in `error` when GStreamer refuses the offer.
camrec_webrtc_session *camrec_webrtc_session_create(const char *offer, int payload_type, const camrec_webrtc_sound *sound,
                                                    const char *stun, const char *turn,
                                                    camrec_webrtc_event_handler handler, void *context,
                                                    char *error, size_t size);

// The answer as it stands (with the candidates gathered so far), malloc'd SDP text for the caller to
// free(); NULL if there is none.
char *camrec_webrtc_session_answer(camrec_webrtc_session *session);

// Hands one access unit (Annex-B) to the session's appsrc, copied, stamped with its capture time
// (CLOCK_MONOTONIC ns; what was captured before the session started is dropped). 0, or -1 when the
// session no longer takes any (it is flushing or failed).
int camrec_webrtc_session_push(camrec_webrtc_session *session, const uint8_t *data, size_t size, uint64_t capture);

// The same for one sound packet (AAC or Opus as the recording encodes it): `capture` is the capture time
// of its first sample, encoder priming included, `duration` how long it plays. Nothing when the session
// sends no sound.
int camrec_webrtc_session_push_sound(camrec_webrtc_session *session, const uint8_t *data, size_t size,
                                     uint64_t capture, uint64_t duration);

// Seconds since the viewer last sent RTCP (receiver reports come about every second while it plays), or
// since the session started if it never has: how a viewer that vanished without a word is noticed.
double camrec_webrtc_session_silent_seconds(camrec_webrtc_session *session);

// Stops the pipeline and frees the session. No handler call runs after this returns.
void camrec_webrtc_session_destroy(camrec_webrtc_session *session);

#endif
