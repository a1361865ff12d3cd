#ifndef CAMREC_CX264_H
#define CAMREC_CX264_H

// libx264 itself (Debian's libx264-dev), so that recording H.264 in software loads no libavcodec.
#include <stdint.h>
#include <x264.h>

// x264_encoder_open is a macro naming the build's own symbol (x264_encoder_open_164); Swift
// imports no such macro.
static inline x264_t *camrec_x264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }

// x264 logs through a variadic callback Swift cannot write. This one prints a line at or below
// `level` as "[libx264] ...", as libavcodec's wrapper did through av_log, and keeps the last error
// line for camrec's own message. One per encoder: `param->p_log_private` points at it.
typedef struct camrec_x264_log {
    int level;
    char last_error[512];
} camrec_x264_log;

void camrec_x264_log_attach(x264_param_t *param, camrec_x264_log *log);

#endif
