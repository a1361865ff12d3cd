// GStreamer's webrtcbin opened on first use (dlopen + dlsym), like libav* in Sources/CFFmpeg/LazyLibav.c;
// a viewer's session is GStreamerWebRTCSession.c. The GStreamer and GLib types both use are in GStreamerABI.h.
#include "CGStreamer.h"
#include "CLazyLoad.h"
#include "GStreamerABI.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// gstreamer1.0-plugins-bad brings every library below but libnice's plugin (gstreamer1.0-nice).
static const char *const packages = "gstreamer1.0-plugins-bad gstreamer1.0-nice";

struct camrec_gst_functions camrec_gst;

static int loaded;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

int camrec_webrtc_load(char *error, size_t size) {
    pthread_mutex_lock(&load_lock);
    if (loaded) {
        pthread_mutex_unlock(&load_lock);
        return 1;
    }
    static const char *const libraries[] = {
        "libglib-2.0.so.0", "libgobject-2.0.so.0", "libgstreamer-1.0.so.0", "libgstapp-1.0.so.0",
        "libgstsdp-1.0.so.0", "libgstwebrtc-1.0.so.0",
    };
    enum { library_count = sizeof libraries / sizeof libraries[0] };
    void *handles[library_count];
    for (size_t i = 0; i < library_count; i++) {
        handles[i] = camrec_open_library(libraries[i], packages, error, size);
        if (!handles[i]) {
            pthread_mutex_unlock(&load_lock);
            return 0;
        }
    }
    struct { void **slot; int library; const char *name; } symbols[] = {
        {(void **)&camrec_gst.g_free, 0, "g_free"},
        {(void **)&camrec_gst.g_error_free, 0, "g_error_free"},
        {(void **)&camrec_gst.g_object_set, 1, "g_object_set"},
        {(void **)&camrec_gst.g_object_get, 1, "g_object_get"},
        {(void **)&camrec_gst.g_object_unref, 1, "g_object_unref"},
        {(void **)&camrec_gst.g_signal_connect_data, 1, "g_signal_connect_data"},
        {(void **)&camrec_gst.g_signal_emit_by_name, 1, "g_signal_emit_by_name"},
        {(void **)&camrec_gst.g_signal_handlers_disconnect_matched, 1, "g_signal_handlers_disconnect_matched"},
        {(void **)&camrec_gst.gst_init_check, 2, "gst_init_check"},
        {(void **)&camrec_gst.gst_element_factory_find, 2, "gst_element_factory_find"},
        {(void **)&camrec_gst.gst_object_unref, 2, "gst_object_unref"},
        {(void **)&camrec_gst.gst_parse_launch, 2, "gst_parse_launch"},
        {(void **)&camrec_gst.gst_bin_get_by_name, 2, "gst_bin_get_by_name"},
        {(void **)&camrec_gst.gst_element_get_base_time, 2, "gst_element_get_base_time"},
        {(void **)&camrec_gst.gst_pipeline_use_clock, 2, "gst_pipeline_use_clock"},
        {(void **)&camrec_gst.gst_system_clock_obtain, 2, "gst_system_clock_obtain"},
        {(void **)&camrec_gst.gst_element_set_state, 2, "gst_element_set_state"},
        {(void **)&camrec_gst.gst_element_get_static_pad, 2, "gst_element_get_static_pad"},
        {(void **)&camrec_gst.gst_pad_add_probe, 2, "gst_pad_add_probe"},
        {(void **)&camrec_gst.gst_pad_probe_info_get_event, 2, "gst_pad_probe_info_get_event"},
        {(void **)&camrec_gst.gst_event_get_structure, 2, "gst_event_get_structure"},
        {(void **)&camrec_gst.gst_structure_has_name, 2, "gst_structure_has_name"},
        {(void **)&camrec_gst.gst_structure_has_field, 2, "gst_structure_has_field"},
        {(void **)&camrec_gst.gst_structure_get, 2, "gst_structure_get"},
        {(void **)&camrec_gst.gst_promise_new, 2, "gst_promise_new"},
        {(void **)&camrec_gst.gst_promise_wait, 2, "gst_promise_wait"},
        {(void **)&camrec_gst.gst_promise_get_reply, 2, "gst_promise_get_reply"},
        {(void **)&camrec_gst.gst_mini_object_unref, 2, "gst_mini_object_unref"},
        {(void **)&camrec_gst.gst_caps_from_string, 2, "gst_caps_from_string"},
        {(void **)&camrec_gst.gst_buffer_new_memdup, 2, "gst_buffer_new_memdup"},
        {(void **)&camrec_gst.gst_app_src_push_buffer, 3, "gst_app_src_push_buffer"},
        {(void **)&camrec_gst.gst_sdp_message_new_from_text, 4, "gst_sdp_message_new_from_text"},
        {(void **)&camrec_gst.gst_sdp_message_as_text, 4, "gst_sdp_message_as_text"},
        {(void **)&camrec_gst.gst_sdp_message_free, 4, "gst_sdp_message_free"},
        {(void **)&camrec_gst.gst_webrtc_session_description_new, 5, "gst_webrtc_session_description_new"},
        {(void **)&camrec_gst.gst_webrtc_session_description_free, 5, "gst_webrtc_session_description_free"},
        {(void **)&camrec_gst.gst_webrtc_session_description_get_type, 5, "gst_webrtc_session_description_get_type"},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        *symbols[i].slot = dlsym(handles[symbols[i].library], symbols[i].name);
        if (!*symbols[i].slot) {
            camrec_describe_load_failure(symbols[i].name, dlerror(), packages, error, size);
            pthread_mutex_unlock(&load_lock);
            return 0;
        }
    }
    loaded = 1;
    pthread_mutex_unlock(&load_lock);
    return 1;
}

static int started;
static char start_failure[512];

int camrec_gst_has_elements(const struct needed_element *needed, size_t count, const char *purpose, char *error, size_t size) {
    for (size_t i = 0; i < count; i++) {
        void *factory = camrec_gst.gst_element_factory_find(needed[i].element);
        if (factory) {
            camrec_gst.gst_object_unref(factory);
            continue;
        }
        char detail[160];
        snprintf(detail, sizeof detail, "GStreamer has no %s element%s", needed[i].element, purpose);
        camrec_describe_load_failure("WebRTC", detail, needed[i].package, error, size);
        return 0;
    }
    return 1;
}

int camrec_webrtc_start(char *error, size_t size) {
    if (!camrec_webrtc_load(error, size)) return 0;
    pthread_mutex_lock(&load_lock);
    if (!started) {
        GError *failure = NULL;
        if (!camrec_gst.gst_init_check(NULL, NULL, &failure)) {
            snprintf(start_failure, sizeof start_failure, "cannot start GStreamer (%s)", failure ? failure->message : "unknown error");
            if (failure) camrec_gst.g_error_free(failure);
        } else {
            // Each element a session needs, and the package that has it.
            static const struct needed_element needed[] = {
                {"appsrc", "gstreamer1.0-plugins-base"}, {"rtph264pay", "gstreamer1.0-plugins-good"},
                {"webrtcbin", "gstreamer1.0-plugins-bad"}, {"dtlssrtpenc", "gstreamer1.0-plugins-bad"},
                {"srtpenc", "gstreamer1.0-plugins-bad"}, {"nicesrc", "gstreamer1.0-nice"},
                // The sound, as Opus (camrec's own, or the one encode of an AAC recording all viewers share).
                {"rtpopuspay", "gstreamer1.0-plugins-good"},
            };
            void *nice = dlopen("libnice.so.10", RTLD_NOW | RTLD_LOCAL);
            if (nice) camrec_gst.nice_agent_remove_stream = (void (*)(void *, unsigned))dlsym(nice, "nice_agent_remove_stream");
            camrec_gst_has_elements(needed, sizeof needed / sizeof needed[0], "", start_failure, sizeof start_failure);
        }
        started = start_failure[0] ? -1 : 1;
    }
    int ok = started == 1;
    if (!ok) snprintf(error, size, "%s", start_failure);
    pthread_mutex_unlock(&load_lock);
    return ok;
}
