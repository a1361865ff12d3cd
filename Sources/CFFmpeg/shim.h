#ifndef CAMREC_CFFMPEG_SHIM_H
#define CAMREC_CFFMPEG_SHIM_H

#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <errno.h>

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

#endif
