// libasound opened on first use, not at start, as libav* are (Sources/CFFmpeg/LazyLibav.c): only a
// recording with `--audio DEVICE` or `camrec devices` needs it, and a machine without libasound2
// still records video. Each function camrec calls is defined here with the header's own prototype
// and forwards to the library's symbol, looked up once.

#include "CALSA.h"
#include "CLazyLoad.h"

#include <dlfcn.h>
#include <pthread.h>

static const char *const library_name = "libasound.so.2";
static const char *const package_name = "libasound2";
static void *handle;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void quiet(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

int camrec_alsa_try_load(char *error, size_t size) {
    if (__atomic_load_n(&handle, __ATOMIC_ACQUIRE)) return 0;
    pthread_mutex_lock(&load_lock);
    if (!handle) {
        void *opened = camrec_open_library(library_name, package_name, error, size);
        if (!opened) {
            pthread_mutex_unlock(&load_lock);
            return -1;
        }
        // libasound prints its own errors on stderr ("ALSA lib pcm.c:…"); camrec says what went
        // wrong in one line of its own.
        int (*set_handler)(snd_lib_error_handler_t) = (int (*)(snd_lib_error_handler_t))dlsym(opened, "snd_lib_error_set_handler");
        if (set_handler) set_handler(quiet);
        __atomic_store_n(&handle, opened, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&load_lock);
    return 0;
}

// Reached only after camrec_alsa_try_load succeeded (Swift asks it first); a missing symbol is a
// broken installation: one line and exit status 73, as for libav*.
static void *symbol(const char *name) {
    char error[512];
    if (camrec_alsa_try_load(error, sizeof error) != 0) camrec_exit_unavailable(error);
    void *found = dlsym(handle, name);
    if (!found) {
        camrec_describe_load_failure(name, dlerror(), package_name, error, sizeof error);
        camrec_exit_unavailable(error);
    }
    return found;
}

#define LOOKUP(type, name, parameters) CAMREC_LAZY_LOOKUP(type, parameters, symbol(#name))
#define FORWARD(type, name, parameters, arguments)                                        \
    type name parameters { LOOKUP(type, name, parameters) return found arguments; }
#define FORWARD_VOID(name, parameters, arguments)                                         \
    void name parameters { LOOKUP(void, name, parameters) found arguments; }

FORWARD(int, snd_pcm_open, (snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode), (pcm, name, stream, mode))
FORWARD(int, snd_pcm_close, (snd_pcm_t *pcm), (pcm))
FORWARD(const char *, snd_strerror, (int errnum), (errnum))
FORWARD(int, snd_pcm_hw_params_malloc, (snd_pcm_hw_params_t **ptr), (ptr))
FORWARD_VOID(snd_pcm_hw_params_free, (snd_pcm_hw_params_t *obj), (obj))
FORWARD(int, snd_pcm_hw_params_any, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params), (pcm, params))
FORWARD(int, snd_pcm_hw_params_set_access, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_access_t _access), (pcm, params, _access))
FORWARD(int, snd_pcm_hw_params_set_format, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val), (pcm, params, val))
FORWARD(int, snd_pcm_hw_params_test_format, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_format_t val), (pcm, params, val))
FORWARD(int, snd_pcm_hw_params_set_channels, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val), (pcm, params, val))
FORWARD(int, snd_pcm_hw_params_test_channels, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val), (pcm, params, val))
FORWARD(int, snd_pcm_hw_params_get_channels_min, (const snd_pcm_hw_params_t *params, unsigned int *val), (params, val))
FORWARD(int, snd_pcm_hw_params_get_channels_max, (const snd_pcm_hw_params_t *params, unsigned int *val), (params, val))
FORWARD(int, snd_pcm_hw_params_set_rate, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val, int dir), (pcm, params, val, dir))
FORWARD(int, snd_pcm_hw_params_test_rate, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, unsigned int val, int dir), (pcm, params, val, dir))
FORWARD(int, snd_pcm_hw_params_get_rate_min, (const snd_pcm_hw_params_t *params, unsigned int *val, int *dir), (params, val, dir))
FORWARD(int, snd_pcm_hw_params_get_rate_max, (const snd_pcm_hw_params_t *params, unsigned int *val, int *dir), (params, val, dir))
FORWARD(int, snd_pcm_hw_params_set_period_size_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val, int *dir), (pcm, params, val, dir))
FORWARD(int, snd_pcm_hw_params_set_buffer_size_near, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val), (pcm, params, val))
FORWARD(int, snd_pcm_hw_params_get_period_size, (const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *frames, int *dir), (params, frames, dir))
FORWARD(int, snd_pcm_hw_params_get_buffer_size, (const snd_pcm_hw_params_t *params, snd_pcm_uframes_t *val), (params, val))
FORWARD(int, snd_pcm_hw_params, (snd_pcm_t *pcm, snd_pcm_hw_params_t *params), (pcm, params))
FORWARD(int, snd_pcm_sw_params_malloc, (snd_pcm_sw_params_t **ptr), (ptr))
FORWARD_VOID(snd_pcm_sw_params_free, (snd_pcm_sw_params_t *obj), (obj))
FORWARD(int, snd_pcm_sw_params_current, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params))
FORWARD(int, snd_pcm_sw_params_set_tstamp_mode, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_tstamp_t val), (pcm, params, val))
FORWARD(int, snd_pcm_sw_params_set_tstamp_type, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_tstamp_type_t val), (pcm, params, val))
FORWARD(int, snd_pcm_sw_params_set_start_threshold, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, snd_pcm_sw_params_set_avail_min, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
FORWARD(int, snd_pcm_sw_params, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params))
FORWARD(int, snd_pcm_start, (snd_pcm_t *pcm), (pcm))
FORWARD(int, snd_pcm_prepare, (snd_pcm_t *pcm), (pcm))
FORWARD(int, snd_pcm_resume, (snd_pcm_t *pcm), (pcm))
FORWARD(int, snd_pcm_drop, (snd_pcm_t *pcm), (pcm))
FORWARD(snd_pcm_sframes_t, snd_pcm_readi, (snd_pcm_t *pcm, void *buffer, snd_pcm_uframes_t size), (pcm, buffer, size))
FORWARD(int, snd_pcm_wait, (snd_pcm_t *pcm, int timeout), (pcm, timeout))
FORWARD(int, snd_pcm_htimestamp, (snd_pcm_t *pcm, snd_pcm_uframes_t *avail, snd_htimestamp_t *tstamp), (pcm, avail, tstamp))
FORWARD(snd_pcm_sframes_t, snd_pcm_avail_update, (snd_pcm_t *pcm), (pcm))
FORWARD(snd_pcm_state_t, snd_pcm_state, (snd_pcm_t *pcm), (pcm))
