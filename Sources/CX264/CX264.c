#include "CX264.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void camrec_x264_log_line(void *private, int level, const char *format, va_list args) {
    camrec_x264_log *log = private;
    char line[512];
    vsnprintf(line, sizeof line, format, args);
    size_t length = strlen(line);
    while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) line[--length] = 0;
    if (level == X264_LOG_ERROR) snprintf(log->last_error, sizeof log->last_error, "%s", line);
    if (level <= log->level) fprintf(stderr, "[libx264] %s\n", line);
}

void camrec_x264_log_attach(x264_param_t *param, camrec_x264_log *log) {
    param->pf_log = camrec_x264_log_line;
    param->p_log_private = log;
    param->i_log_level = log->level;
}
