// One WebRTC viewer's GStreamer session (webrtcbin fed by appsrc), on the functions LazyGStreamer.c looked up.
#include "CGStreamer.h"
#include "GStreamerABI.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct camrec_webrtc_session {
    // `sound` is the sound's appsrc, NULL when the session sends the picture only.
    GstElement *pipeline, *webrtc, *source, *sound, *rtpbin;
    // libnice's agent, whose sockets are closed by hand at the end.
    void *agent;
    pthread_mutex_t lock;
    camrec_webrtc_event_handler handler;
    void *context;
    // CLOCK_MONOTONIC seconds: the start, and the viewer's newest RTCP.
    double heard;
};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void tell(camrec_webrtc_session *session, int event) {
    pthread_mutex_lock(&session->lock);
    if (session->handler) session->handler(session->context, event);
    pthread_mutex_unlock(&session->lock);
}

// rtpsession turns a PLI or FIR into an upstream GstForceKeyUnit event towards the payloader.
static int on_upstream_event(GstPad *pad, GstPadProbeInfo *info, void *data) {
    (void)pad;
    GstEvent *event = camrec_gst.gst_pad_probe_info_get_event(info);
    const GstStructure *structure = event ? camrec_gst.gst_event_get_structure(event) : NULL;
    if (structure && camrec_gst.gst_structure_has_name(structure, "GstForceKeyUnit")) tell(data, CAMREC_WEBRTC_KEYFRAME_WANTED);
    return GST_PAD_PROBE_OK;
}

static void on_gathering(void *webrtc, void *spec, void *data) {
    (void)spec;
    int state = 0;
    camrec_gst.g_object_get(webrtc, "ice-gathering-state", &state, NULL);
    if (state == GST_WEBRTC_ICE_GATHERING_STATE_COMPLETE) tell(data, CAMREC_WEBRTC_GATHERED);
}

static void on_connection(void *webrtc, void *spec, void *data) {
    (void)spec;
    int ice = 0, peer = 0;
    camrec_gst.g_object_get(webrtc, "ice-connection-state", &ice, "connection-state", &peer, NULL);
    if (ice == GST_WEBRTC_ICE_CONNECTION_STATE_FAILED || ice == GST_WEBRTC_ICE_CONNECTION_STATE_CLOSED ||
        peer == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED || peer == GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED)
        tell(data, CAMREC_WEBRTC_FAILED);
}

// rtpbin: an SSRC sent RTCP (the viewer's receiver reports); a BYE ends the session at once.
static void on_ssrc_active(GstElement *rtpbin, unsigned session_id, unsigned ssrc, void *data) {
    (void)rtpbin; (void)session_id; (void)ssrc;
    camrec_webrtc_session *session = data;
    pthread_mutex_lock(&session->lock);
    session->heard = now_seconds();
    pthread_mutex_unlock(&session->lock);
}

static void on_bye(GstElement *rtpbin, unsigned session_id, unsigned ssrc, void *data) {
    (void)rtpbin; (void)session_id; (void)ssrc;
    tell(data, CAMREC_WEBRTC_FAILED);
}

// Emits a webrtcbin action that answers through a promise and waits for it (webrtcbin's own thread
// replies within milliseconds). The reply's "error", if any, goes into `error`.
static int run_promise(camrec_webrtc_session *session, const char *action, void *argument,
                       GstWebRTCSessionDescription **answer, char *error, size_t size) {
    GstPromise *promise = camrec_gst.gst_promise_new();
    camrec_gst.g_signal_emit_by_name(session->webrtc, action, argument, promise);
    int result = camrec_gst.gst_promise_wait(promise);
    const GstStructure *reply = result == GST_PROMISE_RESULT_REPLIED ? camrec_gst.gst_promise_get_reply(promise) : NULL;
    int ok = result == GST_PROMISE_RESULT_REPLIED;
    if (reply && camrec_gst.gst_structure_has_field(reply, "error")) {
        snprintf(error, size, "webrtcbin refused the offer (%s)", action);
        ok = 0;
    }
    if (ok && answer) {
        if (!reply || !camrec_gst.gst_structure_get(reply, "answer", camrec_gst.gst_webrtc_session_description_get_type(), answer, NULL) || !*answer) {
            snprintf(error, size, "webrtcbin made no answer to the offer (nothing in it camrec can send)");
            ok = 0;
        }
    }
    if (!ok && !error[0]) snprintf(error, size, "webrtcbin did not answer %s", action);
    camrec_gst.gst_mini_object_unref(promise);
    return ok;
}

// Points a transceiver of webrtcbin (numbered in the order the pipeline linked its pads) at one send-only
// format: the offer's payload type for it. With `nack`, webrtcbin answers the offer's NACK feedback and
// its RTX payload type for that format (a=rtcp-fb:PT nack, a=rtpmap:RTX rtx/90000 with apt=PT) and
// resends the packets a viewer reports lost (rtprtxsend, on RTX's own payload type and SSRC, RFC 4588).
static void send_only(camrec_webrtc_session *session, int index, const char *caps_text, int nack) {
    void *transceiver = NULL;
    camrec_gst.g_signal_emit_by_name(session->webrtc, "get-transceiver", index, &transceiver);
    if (!transceiver) return;
    GstCaps *caps = camrec_gst.gst_caps_from_string(caps_text);
    camrec_gst.g_object_set(transceiver, "direction", GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDONLY, "codec-preferences", caps,
                   "do-nack", nack, NULL);
    camrec_gst.gst_mini_object_unref(caps);
    camrec_gst.gst_object_unref(transceiver);
}

// AAC at a rate Opus does not take is decoded and encoded as Opus per viewer: the elements for that, checked
// when such a session is made (a recording at other rates needs none of them).
static int has_aac_elements(char *error, size_t size) {
    static const struct needed_element needed[] = {
        {"faad", "gstreamer1.0-plugins-bad"}, {"audioconvert", "gstreamer1.0-plugins-base"},
        {"audioresample", "gstreamer1.0-plugins-base"}, {"opusenc", "gstreamer1.0-plugins-base"},
    };
    return camrec_gst_has_elements(needed, sizeof needed / sizeof needed[0], " for sound at this rate", error, size);
}

camrec_webrtc_session *camrec_webrtc_session_create(const char *offer, int payload_type, const camrec_webrtc_sound *sound,
                                                    const char *stun, const char *turn,
                                                    camrec_webrtc_event_handler handler, void *context,
                                                    char *error, size_t size) {
    error[0] = 0;
    if (!camrec_webrtc_start(error, size)) return NULL;
    if (sound && sound->codec == CAMREC_WEBRTC_SOUND_AAC && !has_aac_elements(error, size)) return NULL;
    GstSDPMessage *message = NULL;
    if (camrec_gst.gst_sdp_message_new_from_text(offer, &message) != 0 || !message) {
        snprintf(error, size, "the offer is not SDP GStreamer can read");
        return NULL;
    }
    camrec_webrtc_session *session = calloc(1, sizeof *session);
    pthread_mutex_init(&session->lock, NULL);
    session->heard = now_seconds();
    // The picture's SSRC, chosen here so that the answer can name it: with NACK on, webrtcbin's answer
    // lists the SSRCs of the transceiver's format (and RTX's beside it, a=ssrc-group:FID), and the browser
    // then plays the SSRCs named only; rtph264pay's own random one would go unplayed.
    uint32_t video_ssrc = arc4random();
    char description[2048];
    // Access units as the hub has them (4-byte start codes, SPS and PPS before every IDR), stamped with
    // their capture time (camrec_webrtc_session_push); config-interval=-1 sends SPS and PPS with every IDR,
    // and zero-latency aggregation sends each picture as soon as its last NAL unit is in.
    int length = snprintf(description, sizeof description,
             "appsrc name=source is-live=true do-timestamp=false format=time max-bytes=8000000 leaky-type=upstream "
             "caps=video/x-h264,stream-format=byte-stream,alignment=au "
             "! rtph264pay name=pay config-interval=-1 aggregate-mode=zero-latency mtu=1200 pt=%d ssrc=%u "
             "! webrtcbin name=webrtc bundle-policy=max-bundle latency=0", payload_type, video_ssrc);
    // The sound on webrtcbin's second pad, stamped with the same capture clock as the picture: Opus (the
    // recording's, or camrec's one encode of an AAC recording's samples that every viewer shares), or, at
    // AAC rates Opus does not take, AAC decoded and encoded as Opus at 48 kHz (what every browser decodes).
    if (sound && sound->codec == CAMREC_WEBRTC_SOUND_OPUS)
        length += snprintf(description + length, sizeof description - length,
             " appsrc name=sound is-live=true do-timestamp=false format=time max-bytes=1000000 leaky-type=upstream "
             "caps=audio/x-opus,channel-mapping-family=0,channels=%d,rate=48000 "
             "! rtpopuspay mtu=1200 pt=%d ! webrtc.", sound->channels, sound->payload_type);
    else if (sound && sound->codec == CAMREC_WEBRTC_SOUND_AAC)
        length += snprintf(description + length, sizeof description - length,
             " appsrc name=sound is-live=true do-timestamp=false format=time max-bytes=1000000 leaky-type=upstream "
             "caps=\"audio/mpeg,mpegversion=4,stream-format=raw,rate=%d,channels=%d,codec_data=(buffer)%s\" "
             "! faad ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=[1,2] "
             "! opusenc bitrate=64000 frame-size=20 ! rtpopuspay mtu=1200 pt=%d ! webrtc.",
             sound->rate, sound->channels, sound->aac_configuration, sound->payload_type);
    if (length >= (int)sizeof description) {
        snprintf(error, size, "the sound's description is too long for the WebRTC pipeline");
        camrec_gst.gst_sdp_message_free(message);
        free(session);
        return NULL;
    }
    GError *failure = NULL;
    session->pipeline = camrec_gst.gst_parse_launch(description, &failure);
    if (!session->pipeline || failure) {
        snprintf(error, size, "cannot make the WebRTC pipeline (%s)", failure ? failure->message : "unknown error");
        if (failure) camrec_gst.g_error_free(failure);
        if (session->pipeline) camrec_gst.gst_object_unref(session->pipeline);
        camrec_gst.gst_sdp_message_free(message);
        free(session);
        return NULL;
    }
    // The monotonic system clock (CLOCK_MONOTONIC, camrec's capture clock): a buffer's running time is its
    // capture time less the pipeline's base time.
    void *clock = camrec_gst.gst_system_clock_obtain();
    camrec_gst.gst_pipeline_use_clock(session->pipeline, clock);
    camrec_gst.gst_object_unref(clock);
    session->webrtc = camrec_gst.gst_bin_get_by_name(session->pipeline, "webrtc");
    session->source = camrec_gst.gst_bin_get_by_name(session->pipeline, "source");
    session->sound = camrec_gst.gst_bin_get_by_name(session->pipeline, "sound");
    session->rtpbin = camrec_gst.gst_bin_get_by_name(session->webrtc, "rtpbin");
    // Host candidates over UDP (and STUN/TURN when given): no ICE-TCP listening sockets, and no UPnP, which
    // libnice would otherwise use to ask the router to forward ports to camrec.
    void *ice = NULL;
    camrec_gst.g_object_get(session->webrtc, "ice-agent", &ice, NULL);
    if (ice) {
        camrec_gst.g_object_set(ice, "ice-tcp", 0, NULL);
        camrec_gst.g_object_get(ice, "agent", &session->agent, NULL);
        if (session->agent) camrec_gst.g_object_set(session->agent, "upnp", 0, NULL);
        camrec_gst.g_object_unref(ice);
    }
    if (stun && stun[0]) camrec_gst.g_object_set(session->webrtc, "stun-server", stun, NULL);
    if (turn && turn[0]) camrec_gst.g_object_set(session->webrtc, "turn-server", turn, NULL);
    // The transceivers (made when the payloaders linked): send only, H.264 and Opus on the offer's payload types.
    char caps_text[160];
    snprintf(caps_text, sizeof caps_text, "application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=%d,ssrc=(uint)%u",
             payload_type, video_ssrc);
    // The picture with retransmission: through loss without it, a lost packet leaves every picture up to
    // the next IDR undecodable. The sound without: a lost Opus packet is concealed for its 20 ms.
    send_only(session, 0, caps_text, 1);
    if (session->sound) {
        snprintf(caps_text, sizeof caps_text, "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=%d",
                 sound->payload_type);
        send_only(session, 1, caps_text, 0);
    }
    GstElement *pay = camrec_gst.gst_bin_get_by_name(session->pipeline, "pay");
    GstPad *pay_source = pay ? camrec_gst.gst_element_get_static_pad(pay, "src") : NULL;
    if (pay_source) {
        camrec_gst.gst_pad_add_probe(pay_source, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, on_upstream_event, session, NULL);
        camrec_gst.gst_object_unref(pay_source);
    }
    if (pay) camrec_gst.gst_object_unref(pay);
    camrec_gst.g_signal_connect_data(session->webrtc, "notify::ice-gathering-state", (GCallback)on_gathering, session, NULL, 0);
    camrec_gst.g_signal_connect_data(session->webrtc, "notify::ice-connection-state", (GCallback)on_connection, session, NULL, 0);
    camrec_gst.g_signal_connect_data(session->webrtc, "notify::connection-state", (GCallback)on_connection, session, NULL, 0);
    if (session->rtpbin) {
        // Sender reports tie each stream's RTP time to its capture time, not to when it was sent: the sound
        // leaves later after its capture than the picture does, and the browser lines them up by these.
        camrec_gst.g_object_set(session->rtpbin, "rtcp-sync-send-time", 0, NULL);
        camrec_gst.g_signal_connect_data(session->rtpbin, "on-ssrc-active", (GCallback)on_ssrc_active, session, NULL, 0);
        camrec_gst.g_signal_connect_data(session->rtpbin, "on-bye-ssrc", (GCallback)on_bye, session, NULL, 0);
    }
    session->handler = handler;
    session->context = context;
    camrec_gst.gst_element_set_state(session->pipeline, GST_STATE_PLAYING);
    GstWebRTCSessionDescription *remote = camrec_gst.gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, message);
    GstWebRTCSessionDescription *answer = NULL;
    int ok = run_promise(session, "set-remote-description", remote, NULL, error, size)
        && run_promise(session, "create-answer", NULL, &answer, error, size)
        && run_promise(session, "set-local-description", answer, NULL, error, size);
    camrec_gst.gst_webrtc_session_description_free(remote);
    if (answer) camrec_gst.gst_webrtc_session_description_free(answer);
    if (!ok) {
        camrec_webrtc_session_destroy(session);
        return NULL;
    }
    return session;
}

char *camrec_webrtc_session_answer(camrec_webrtc_session *session) {
    GstWebRTCSessionDescription *local = NULL;
    camrec_gst.g_object_get(session->webrtc, "local-description", &local, NULL);
    if (!local) return NULL;
    char *text = camrec_gst.gst_sdp_message_as_text(local->sdp);
    char *copy = text ? strdup(text) : NULL;
    camrec_gst.g_free(text);
    camrec_gst.gst_webrtc_session_description_free(local);
    return copy;
}

// Stamps a buffer with its capture time as running time; what was captured before the pipeline started is dropped.
static int push(camrec_webrtc_session *session, GstElement *source, const uint8_t *data, size_t size,
                uint64_t capture, uint64_t duration) {
    GstClockTime base = camrec_gst.gst_element_get_base_time(session->pipeline);
    if (!source || capture < base) return 0;
    GstBuffer *buffer = camrec_gst.gst_buffer_new_memdup(data, size);
    buffer->pts = capture - base;
    if (duration) buffer->duration = duration;
    return camrec_gst.gst_app_src_push_buffer(source, buffer) == GST_FLOW_OK ? 0 : -1;
}

int camrec_webrtc_session_push(camrec_webrtc_session *session, const uint8_t *data, size_t size, uint64_t capture) {
    return push(session, session->source, data, size, capture, 0);
}

int camrec_webrtc_session_push_sound(camrec_webrtc_session *session, const uint8_t *data, size_t size,
                                     uint64_t capture, uint64_t duration) {
    return push(session, session->sound, data, size, capture, duration);
}

double camrec_webrtc_session_silent_seconds(camrec_webrtc_session *session) {
    pthread_mutex_lock(&session->lock);
    double heard = session->heard;
    pthread_mutex_unlock(&session->lock);
    return now_seconds() - heard;
}

void camrec_webrtc_session_destroy(camrec_webrtc_session *session) {
    if (!session) return;
    pthread_mutex_lock(&session->lock);
    session->handler = NULL;
    pthread_mutex_unlock(&session->lock);
    camrec_gst.g_signal_handlers_disconnect_matched(session->webrtc, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, session);
    if (session->rtpbin) camrec_gst.g_signal_handlers_disconnect_matched(session->rtpbin, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, session);
    // Joins the streaming threads (the pad probe's among them) and closes the sockets.
    camrec_gst.gst_element_set_state(session->pipeline, GST_STATE_NULL);
    if (session->rtpbin) camrec_gst.gst_object_unref(session->rtpbin);
    camrec_gst.gst_object_unref(session->source);
    if (session->sound) camrec_gst.gst_object_unref(session->sound);
    camrec_gst.gst_object_unref(session->webrtc);
    camrec_gst.gst_object_unref(session->pipeline);
    // GStreamer 1.22.0's ICE objects keep each other alive after webrtcbin is gone (its ICE object held
    // 2 references more than ours here), and with them libnice's agent, its sockets and its thread: the
    // sockets at least are closed here (webrtcbin makes one stream per bundle, numbered from 1).
    if (session->agent) {
        if (camrec_gst.nice_agent_remove_stream)
            for (unsigned stream = 1; stream <= 4; stream++) camrec_gst.nice_agent_remove_stream(session->agent, stream);
        camrec_gst.g_object_unref(session->agent);
    }
    pthread_mutex_destroy(&session->lock);
    free(session);
}
