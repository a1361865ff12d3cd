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
#include <libswresample/swresample.h>
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

// A thread that talks to a media server through libavformat keeps that library's error lines
// for itself ("method ANNOUNCE failed: 404 Not Found") and puts them into camrec's own message,
// rather than having them printed once per reconnect attempt.
typedef struct camrec_thread_log {
    int quiet;
    char last_error[512];
} camrec_thread_log;

static inline camrec_thread_log *camrec_thread_log_get(void) {
    static __thread camrec_thread_log state;
    return &state;
}

static inline char *camrec_star(char *from, char *to) {
    // Replaces [from, to) with ***, moving the rest of the string; returns the end of the stars.
    memmove(from + 3, to, strlen(to) + 1);
    memcpy(from, "***", 3);
    return from + 3;
}

/// Replaces the secrets of every URL in line with ***: user:password@ in the authority and the
/// value of every query parameter (an SRT passphrase, a stream id or token). In place: the
/// buffer needs room for up to 3 times the line's length.
static inline void camrec_redact_urls(char *line) {
    // A URL ends at a space, a line end or a quote.
    char *p = line;
    while ((p = strstr(p, "://")) != NULL) {
        char *authority = p + 3;
        char *end = authority + strcspn(authority, "/? \n'\"");
        char *at = NULL;
        for (char *q = authority; q < end; q++) if (*q == '@') at = q;
        if (at) end = camrec_star(authority, at) + (end - at);
        char *q = end + strcspn(end, "? \n'\"");
        if (*q == '?') {
            q++;
            while (*q && !strchr(" \n'\"", *q)) {
                q += strcspn(q, "=& \n'\"");
                if (*q != '=') { if (*q == '&') q++; continue; }
                char *value = ++q;
                q += strcspn(q, "& \n'\"");
                if (q - value != 3 || memcmp(value, "***", 3) != 0) q = camrec_star(value, q);
                if (*q == '&') q++;
            }
        }
        p = q;
    }
}

/// Prints one libav* line the way libavutil would ("[tcp @ 0x…] …"), with URL secrets redacted.
static inline void camrec_log_print(void *avcl, int level, const char *fmt, va_list vl) {
    static int print_prefix = 1;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    if (level > av_log_get_level()) return;
    // Redaction can lengthen a line (a 1-byte query value becomes ***): room for 3 times it.
    char line[4096];
    va_list copy;
    va_copy(copy, vl);
    pthread_mutex_lock(&lock);
    av_log_format_line2(avcl, level, fmt, copy, line, sizeof line / 3, &print_prefix);
    va_end(copy);
    camrec_redact_urls(line);
    fputs(line, stderr);
    pthread_mutex_unlock(&lock);
}

/// One log call's text (without libavutil's "[name @ 0x…]" prefix), leaving vl usable.
static inline void camrec_log_piece(char *piece, size_t size, const char *fmt, va_list vl) {
    va_list copy;
    va_copy(copy, vl);
    vsnprintf(piece, size, fmt, copy);
    va_end(copy);
}

static inline void camrec_log_callback(void *avcl, int level, const char *fmt, va_list vl) {
    camrec_thread_log *t = camrec_thread_log_get();
    if (t->quiet) {
        if (level <= AV_LOG_ERROR) {
            char piece[512];
            camrec_log_piece(piece, sizeof piece, fmt, vl);
            size_t n = strlen(piece);
            while (n > 0 && (piece[n - 1] == '\n' || piece[n - 1] == ' ' || piece[n - 1] == '.')) piece[--n] = 0;
            size_t have = strlen(t->last_error);
            if (n > 0 && !strstr(t->last_error, piece))
                snprintf(t->last_error + have, sizeof t->last_error - have, "%s%s", have ? "; " : "", piece);
        }
        if (av_log_get_level() < AV_LOG_INFO) return;
        camrec_log_print(avcl, level, fmt, vl);
        return;
    }
    camrec_log_state *s = camrec_log_state_get();
    int quiet;
    pthread_mutex_lock(&s->lock);
    quiet = s->quiet;
    if (level <= AV_LOG_ERROR) {
        char piece[1024];
        camrec_log_piece(piece, sizeof piece, fmt, vl);
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
    camrec_log_print(avcl, level, fmt, vl);
}

/// This thread's libav* error lines are kept (see camrec_thread_log_take) instead of printed.
static inline void camrec_thread_log_keep(int keep) {
    camrec_thread_log_get()->quiet = keep;
    camrec_thread_log_get()->last_error[0] = 0;
}

/// Copies this thread's kept error lines into buf ("" if none) and forgets them.
static inline void camrec_thread_log_take(char *buf, size_t size) {
    snprintf(buf, size, "%s", camrec_thread_log_get()->last_error);
    camrec_thread_log_get()->last_error[0] = 0;
}

/// Installs the capturing callback (idempotent) and sets whether error lines are printed.
static inline void camrec_log_capture(int quiet) {
    camrec_log_state *s = camrec_log_state_get();
    pthread_mutex_lock(&s->lock);
    s->quiet = quiet;
    pthread_mutex_unlock(&s->lock);
    av_log_set_callback(camrec_log_callback);
}

/// Every error line printed as it comes again (URL secrets still redacted).
static inline void camrec_log_release(void) {
    camrec_log_state *s = camrec_log_state_get();
    pthread_mutex_lock(&s->lock);
    s->quiet = 0;
    pthread_mutex_unlock(&s->lock);
    av_log_set_callback(camrec_log_callback);
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

// Whether libavutil (and with it any libav* library) has been loaded yet: camrec loads them on
// first use (LazyLibav.c).
int camrec_libav_is_loaded(void);

// Opens libavutil, libavcodec and libavformat now: 0, or -1 with the one-line reason (the package to
// install) in `error`. For a recording that will need them, before it creates any file.
int camrec_libav_try_load(char *error, size_t size);
// libswresample, which only a microphone needs; 0, or -1 with the reason (and the package) in `error`.
int camrec_swresample_try_load(char *error, size_t size);
// libva the same way (VA-API opens it before libavutil, which needs it, so a missing libva is named as itself).
int camrec_libva_try_load(char *error, size_t size);

#endif
