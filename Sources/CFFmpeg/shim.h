#ifndef CAMREC_CFFMPEG_SHIM_H
#define CAMREC_CFFMPEG_SHIM_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_vaapi.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <va/va.h>
#include <va/va_str.h>

// Function-like macros do not import into Swift; these constants and inline
// functions carry their values across.
static const int camrec_AVERROR_EOF = AVERROR_EOF;
static const int camrec_AVERROR_EAGAIN = AVERROR(EAGAIN);
static const int64_t camrec_AV_NOPTS_VALUE = AV_NOPTS_VALUE;

static inline int camrec_averror(int posixErrno) { return AVERROR(posixErrno); }

static inline void camrec_av_error_string(int err, char *buf, size_t size) {
    av_strerror(err, buf, size);
}

// av_log is variadic; camrec only needs to quiet or raise libav's own logging.
static inline void camrec_av_set_log_level(int level) { av_log_set_level(level); }

// libav* log capture (used by the VAAPI backend). libavutil and libva (through FFmpeg's
// vaSetErrorCallback) report the real cause of a failure -- "Failed to initialise VAAPI
// connection: 1 (operation failed)", "No usable encoding entrypoint found" -- only as log
// lines, so camrec keeps the last error line to put into its own one-line message. While
// quiet, error lines are kept but not printed (camrec prints its own line instead);
// everything else goes to libavutil's default callback, which honours av_log_set_level.
typedef struct camrec_log_state {
    pthread_mutex_t lock;
    int quiet;
    char pending[1024];
    char last_error[2048];
} camrec_log_state;

static inline camrec_log_state *camrec_log_state_get(void) {
    static camrec_log_state state = { PTHREAD_MUTEX_INITIALIZER, 0, "", "" };
    return &state;
}

static inline void camrec_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    camrec_log_state *s = camrec_log_state_get();
    int quiet;
    pthread_mutex_lock(&s->lock);
    quiet = s->quiet;
    if (level <= AV_LOG_ERROR) {
        char piece[1024];
        va_list copy;
        va_copy(copy, vl);
        vsnprintf(piece, sizeof piece, fmt, copy);
        va_end(copy);
        size_t used = strlen(s->pending);
        snprintf(s->pending + used, sizeof s->pending - used, "%s", piece);
        size_t n = strlen(s->pending);
        if (n > 0 && s->pending[n - 1] == '\n') {
            while (n > 0 && (s->pending[n - 1] == '\n' || s->pending[n - 1] == ' ' || s->pending[n - 1] == '.'))
                s->pending[--n] = 0;
            // Keep every error line since the last take, oldest first: the first is usually
            // the cause ("Failed to end picture encode issue"), the last the consequence.
            if (n > 0) {
                size_t have = strlen(s->last_error);
                if (have == 0) snprintf(s->last_error, sizeof s->last_error, "%s", s->pending);
                else if (!strstr(s->last_error, s->pending))
                    snprintf(s->last_error + have, sizeof s->last_error - have, "; %s", s->pending);
            }
            s->pending[0] = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (quiet && level <= AV_LOG_ERROR) return;
    av_log_default_callback(avcl, level, fmt, vl);
}

/// Installs the capturing callback (idempotent) and sets whether error lines are printed.
static inline void camrec_log_capture(int quiet) {
    camrec_log_state *s = camrec_log_state_get();
    pthread_mutex_lock(&s->lock);
    s->quiet = quiet;
    pthread_mutex_unlock(&s->lock);
    av_log_set_callback(camrec_log_callback);
}

/// Back to libavutil's own callback: every error line printed as it comes.
static inline void camrec_log_release(void) {
    av_log_set_callback(av_log_default_callback);
}

/// Copies the error lines kept since the last call into buf ("" if none) and forgets them.
static inline void camrec_log_take_last_error(char *buf, size_t size) {
    camrec_log_state *s = camrec_log_state_get();
    pthread_mutex_lock(&s->lock);
    snprintf(buf, size, "%s", s->last_error);
    s->last_error[0] = 0;
    s->pending[0] = 0;
    pthread_mutex_unlock(&s->lock);
}

// VA-API macros that do not import as usable constants.
static const unsigned int camrec_VA_RC_CQP = VA_RC_CQP;
static const unsigned int camrec_VA_RC_CBR = VA_RC_CBR;
static const unsigned int camrec_VA_RC_VBR = VA_RC_VBR;
static const unsigned int camrec_VA_ATTRIB_NOT_SUPPORTED = VA_ATTRIB_NOT_SUPPORTED;
static const int camrec_VA_STATUS_SUCCESS = VA_STATUS_SUCCESS;

#endif
