// libavcodec, libavformat and libavutil opened on first use, not at start.
//
// Debian's libavcodec and libavformat bring about 130 shared libraries with them (x265, dav1d,
// GnuTLS, libsrt, librsvg, …): ~40 MiB of a process's memory before its first frame. A recording
// to a raw .h264 file with libx264 (called directly) needs none of them, so camrec is not linked
// against them: each libav* function camrec calls is defined here, with the headers' own
// prototype, and forwards to the library's symbol, which the first call looks up (dlopen + dlsym).
// A container, H.265, an MJPEG camera, VA-API, a decoder or `--version` loads them as before.
// libva the same way: VA-API is set up through libavutil (which loads libva as its own dependency);
// camrec's own calls of libva (the driver's profiles, image upload) are forwarded below.

#include "CFFmpeg.h"
#include "CLazyLoad.h"

#include <dlfcn.h>
#include <stdlib.h>

// libswresample after the three: only a microphone needs it (camrec_swresample_try_load); libva only VA-API.
enum camrec_library { LIBAVUTIL, LIBAVCODEC, LIBAVFORMAT, LIBSWRESAMPLE, LIBVA, LIBRARY_COUNT };

static const char *const library_names[LIBRARY_COUNT] = {
    "libavutil.so." AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR),
    "libavcodec.so." AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR),
    "libavformat.so." AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR),
    "libswresample.so." AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR),
    "libva.so.2",
};
static const char *const library_packages[LIBRARY_COUNT] = {
    "libavutil" AV_STRINGIFY(LIBAVUTIL_VERSION_MAJOR),
    "libavcodec" AV_STRINGIFY(LIBAVCODEC_VERSION_MAJOR),
    "libavformat" AV_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR),
    "libswresample" AV_STRINGIFY(LIBSWRESAMPLE_VERSION_MAJOR),
    "libva2",
};

static void *handles[LIBRARY_COUNT];
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

// What camrec set for libavutil's logging before libavutil was loaded (applied when it is).
static int pending_log_level = AV_LOG_INFO;
static void (*pending_log_callback)(void *, int, const char *, va_list);

// Opens `which` (libavutil first, always: the logging settings made so far go to it before anything
// logs). NULL with the reason in `error` when it cannot.
static void *open_library(enum camrec_library which, char *error, size_t size) {
    void *handle = __atomic_load_n(&handles[which], __ATOMIC_ACQUIRE);
    if (handle) return handle;
    pthread_mutex_lock(&load_lock);
    // libva first and on its own: libavutil needs it, and a missing libva is named as itself.
    if (which != LIBVA && !handles[LIBAVUTIL]) {
        void *avutil = camrec_open_library(library_names[LIBAVUTIL], library_packages[LIBAVUTIL], error, size);
        void (*set_level)(int) = avutil ? (void (*)(int))dlsym(avutil, "av_log_set_level") : NULL;
        void (*set_callback)(void (*)(void *, int, const char *, va_list)) = avutil
            ? (void (*)(void (*)(void *, int, const char *, va_list)))dlsym(avutil, "av_log_set_callback") : NULL;
        if (!set_level || !set_callback) {
            if (avutil) camrec_describe_load_failure(library_names[LIBAVUTIL], dlerror(), library_packages[LIBAVUTIL], error, size);
            pthread_mutex_unlock(&load_lock);
            return NULL;
        }
        set_level(pending_log_level);
        if (pending_log_callback) set_callback(pending_log_callback);
        __atomic_store_n(&handles[LIBAVUTIL], avutil, __ATOMIC_RELEASE);
    }
    if (!handles[which]) {
        void *opened = camrec_open_library(library_names[which], library_packages[which], error, size);
        if (!opened) {
            pthread_mutex_unlock(&load_lock);
            return NULL;
        }
        __atomic_store_n(&handles[which], opened, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&load_lock);
    return handles[which];
}

static void *library(enum camrec_library which) {
    char error[1024];
    void *handle = open_library(which, error, sizeof error);
    if (!handle) camrec_exit_unavailable(error);
    return handle;
}

int camrec_libav_try_load(char *error, size_t size) {
    for (int which = 0; which < LIBSWRESAMPLE; which++) {
        if (!open_library(which, error, size)) return -1;
    }
    return 0;
}

int camrec_swresample_try_load(char *error, size_t size) {
    return open_library(LIBSWRESAMPLE, error, size) ? 0 : -1;
}

int camrec_libva_try_load(char *error, size_t size) {
    return open_library(LIBVA, error, size) ? 0 : -1;
}

static void *symbol(enum camrec_library which, const char *name) {
    void *found = dlsym(library(which), name);
    if (!found) {
        char error[1024];
        camrec_describe_load_failure(name, dlerror(), library_packages[which], error, sizeof error);
        camrec_exit_unavailable(error);
    }
    return found;
}

int camrec_libav_is_loaded(void) { return __atomic_load_n(&handles[LIBAVUTIL], __ATOMIC_ACQUIRE) != NULL; }

// LOOKUP(library, return type, name, (parameters)): `found`, the library's function, looked up once.
#define LOOKUP(lib, type, name, parameters) CAMREC_LAZY_LOOKUP(type, parameters, symbol(lib, #name))
// FORWARD(library, return type, name, (parameters), (arguments)): the function, forwarded.
#define FORWARD(lib, type, name, parameters, arguments)                                   \
    type name parameters { LOOKUP(lib, type, name, parameters) return found arguments; }
#define FORWARD_VOID(lib, name, parameters, arguments)                                    \
    void name parameters { LOOKUP(lib, void, name, parameters) found arguments; }

// Logging: kept here until libavutil is loaded, so setting it up at start loads nothing.
int av_log_get_level(void) {
    if (!camrec_libav_is_loaded()) return __atomic_load_n(&pending_log_level, __ATOMIC_ACQUIRE);
    LOOKUP(LIBAVUTIL, int, av_log_get_level, (void))
    return found();
}

void av_log_set_level(int level) {
    pthread_mutex_lock(&load_lock);
    __atomic_store_n(&pending_log_level, level, __ATOMIC_RELEASE);
    void *avutil = handles[LIBAVUTIL];
    pthread_mutex_unlock(&load_lock);
    if (avutil) ((void (*)(int))symbol(LIBAVUTIL, "av_log_set_level"))(level);
}

void av_log_set_callback(void (*callback)(void *, int, const char *, va_list)) {
    pthread_mutex_lock(&load_lock);
    pending_log_callback = callback;
    void *avutil = handles[LIBAVUTIL];
    pthread_mutex_unlock(&load_lock);
    if (avutil) ((void (*)(void (*)(void *, int, const char *, va_list)))symbol(LIBAVUTIL, "av_log_set_callback"))(callback);
}

// libavutil
FORWARD(LIBAVUTIL, unsigned, avutil_version, (void), ())
FORWARD(LIBAVUTIL, int, av_log_format_line2, (void *ptr, int level, const char *fmt, va_list vl, char *line, int line_size, int *print_prefix),
        (ptr, level, fmt, vl, line, line_size, print_prefix))
FORWARD(LIBAVUTIL, int, av_strerror, (int errnum, char *errbuf, size_t errbuf_size), (errnum, errbuf, errbuf_size))
FORWARD(LIBAVUTIL, void *, av_malloc, (size_t size), (size))
FORWARD(LIBAVUTIL, void *, av_mallocz, (size_t size), (size))
FORWARD_VOID(LIBAVUTIL, av_freep, (void *ptr), (ptr))
FORWARD(LIBAVUTIL, int64_t, av_rescale_q, (int64_t a, AVRational bq, AVRational cq), (a, bq, cq))
FORWARD(LIBAVUTIL, const char *, av_get_pix_fmt_name, (enum AVPixelFormat pix_fmt), (pix_fmt))
FORWARD(LIBAVUTIL, int, av_dict_set, (AVDictionary **pm, const char *key, const char *value, int flags), (pm, key, value, flags))
FORWARD_VOID(LIBAVUTIL, av_dict_free, (AVDictionary **m), (m))
FORWARD(LIBAVUTIL, int, av_opt_set, (void *obj, const char *name, const char *val, int search_flags), (obj, name, val, search_flags))
FORWARD(LIBAVUTIL, int, av_opt_set_int, (void *obj, const char *name, int64_t val, int search_flags), (obj, name, val, search_flags))
FORWARD(LIBAVUTIL, AVBufferRef *, av_buffer_create, (uint8_t *data, size_t size, void (*free)(void *opaque, uint8_t *data), void *opaque, int flags),
        (data, size, free, opaque, flags))
FORWARD(LIBAVUTIL, AVBufferRef *, av_buffer_ref, (const AVBufferRef *buf), (buf))
FORWARD_VOID(LIBAVUTIL, av_buffer_unref, (AVBufferRef **buf), (buf))
FORWARD(LIBAVUTIL, AVBufferPool *, av_buffer_pool_init, (size_t size, AVBufferRef *(*alloc)(size_t size)), (size, alloc))
FORWARD(LIBAVUTIL, AVBufferRef *, av_buffer_pool_get, (AVBufferPool *pool), (pool))
FORWARD_VOID(LIBAVUTIL, av_buffer_pool_uninit, (AVBufferPool **pool), (pool))
FORWARD(LIBAVUTIL, AVFrame *, av_frame_alloc, (void), ())
FORWARD_VOID(LIBAVUTIL, av_frame_free, (AVFrame **frame), (frame))
FORWARD(LIBAVUTIL, int, av_frame_get_buffer, (AVFrame *frame, int align), (frame, align))
FORWARD(LIBAVUTIL, int, av_frame_make_writable, (AVFrame *frame), (frame))
FORWARD_VOID(LIBAVUTIL, av_frame_move_ref, (AVFrame *dst, AVFrame *src), (dst, src))
FORWARD_VOID(LIBAVUTIL, av_frame_unref, (AVFrame *frame), (frame))
FORWARD(LIBAVUTIL, int, av_hwdevice_ctx_create, (AVBufferRef **device_ctx, enum AVHWDeviceType type, const char *device, AVDictionary *opts, int flags),
        (device_ctx, type, device, opts, flags))
FORWARD(LIBAVUTIL, AVBufferRef *, av_hwframe_ctx_alloc, (AVBufferRef *device_ctx), (device_ctx))
FORWARD(LIBAVUTIL, int, av_hwframe_ctx_init, (AVBufferRef *ref), (ref))
FORWARD(LIBAVUTIL, int, av_hwframe_get_buffer, (AVBufferRef *hwframe_ctx, AVFrame *frame, int flags), (hwframe_ctx, frame, flags))
FORWARD(LIBAVUTIL, int, av_hwframe_map, (AVFrame *dst, const AVFrame *src, int flags), (dst, src, flags))
FORWARD(LIBAVUTIL, int, av_hwframe_transfer_data, (AVFrame *dst, const AVFrame *src, int flags), (dst, src, flags))

FORWARD_VOID(LIBAVUTIL, av_channel_layout_default, (AVChannelLayout *ch_layout, int nb_channels), (ch_layout, nb_channels))
FORWARD_VOID(LIBAVUTIL, av_channel_layout_uninit, (AVChannelLayout *channel_layout), (channel_layout))
FORWARD(LIBAVUTIL, int, av_channel_layout_copy, (AVChannelLayout *dst, const AVChannelLayout *src), (dst, src))
// libavcodec
FORWARD(LIBAVCODEC, unsigned, avcodec_version, (void), ())
FORWARD(LIBAVCODEC, const char *, avcodec_get_name, (enum AVCodecID id), (id))
FORWARD(LIBAVCODEC, const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id))
FORWARD(LIBAVCODEC, const AVCodec *, avcodec_find_encoder, (enum AVCodecID id), (id))
FORWARD(LIBAVCODEC, const AVCodec *, avcodec_find_encoder_by_name, (const char *name), (name))
FORWARD(LIBAVCODEC, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))
FORWARD_VOID(LIBAVCODEC, avcodec_free_context, (AVCodecContext **avctx), (avctx))
FORWARD(LIBAVCODEC, int, avcodec_open2, (AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options), (avctx, codec, options))
FORWARD_VOID(LIBAVCODEC, avcodec_flush_buffers, (AVCodecContext *avctx), (avctx))
FORWARD(LIBAVCODEC, int, avcodec_send_frame, (AVCodecContext *avctx, const AVFrame *frame), (avctx, frame))
FORWARD(LIBAVCODEC, int, avcodec_receive_packet, (AVCodecContext *avctx, AVPacket *avpkt), (avctx, avpkt))
FORWARD(LIBAVCODEC, int, avcodec_send_packet, (AVCodecContext *avctx, const AVPacket *avpkt), (avctx, avpkt))
FORWARD(LIBAVCODEC, int, avcodec_receive_frame, (AVCodecContext *avctx, AVFrame *frame), (avctx, frame))
FORWARD(LIBAVCODEC, AVPacket *, av_packet_alloc, (void), ())
FORWARD_VOID(LIBAVCODEC, av_packet_free, (AVPacket **pkt), (pkt))
FORWARD_VOID(LIBAVCODEC, av_packet_unref, (AVPacket *pkt), (pkt))
FORWARD(LIBAVCODEC, AVCodecParameters *, avcodec_parameters_alloc, (void), ())
FORWARD_VOID(LIBAVCODEC, avcodec_parameters_free, (AVCodecParameters **par), (par))
FORWARD(LIBAVCODEC, int, avcodec_parameters_copy, (AVCodecParameters *dst, const AVCodecParameters *src), (dst, src))
FORWARD(LIBAVCODEC, int, avcodec_parameters_from_context, (AVCodecParameters *par, const AVCodecContext *codec), (par, codec))

// libavformat
FORWARD(LIBAVFORMAT, unsigned, avformat_version, (void), ())
FORWARD(LIBAVFORMAT, int, avformat_alloc_output_context2, (AVFormatContext **ctx, const AVOutputFormat *oformat, const char *format_name, const char *filename),
        (ctx, oformat, format_name, filename))
FORWARD_VOID(LIBAVFORMAT, avformat_free_context, (AVFormatContext *s), (s))
FORWARD(LIBAVFORMAT, AVStream *, avformat_new_stream, (AVFormatContext *s, const AVCodec *c), (s, c))
FORWARD(LIBAVFORMAT, int, avformat_write_header, (AVFormatContext *s, AVDictionary **options), (s, options))
FORWARD(LIBAVFORMAT, int, av_write_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt))
FORWARD(LIBAVFORMAT, int, av_interleaved_write_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt))
FORWARD(LIBAVFORMAT, int, av_write_trailer, (AVFormatContext *s), (s))
FORWARD(LIBAVFORMAT, int, avformat_open_input, (AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options), (ps, url, fmt, options))
FORWARD(LIBAVFORMAT, int, avformat_find_stream_info, (AVFormatContext *ic, AVDictionary **options), (ic, options))
FORWARD_VOID(LIBAVFORMAT, avformat_close_input, (AVFormatContext **s), (s))
FORWARD(LIBAVFORMAT, int, av_find_best_stream, (AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb, int related_stream, const AVCodec **decoder_ret, int flags),
        (ic, type, wanted_stream_nb, related_stream, decoder_ret, flags))
FORWARD(LIBAVFORMAT, int, av_read_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt))
FORWARD(LIBAVFORMAT, AVIOContext *, avio_alloc_context,
        (unsigned char *buffer, int buffer_size, int write_flag, void *opaque, int (*read_packet)(void *opaque, uint8_t *buf, int buf_size),
         int (*write_packet)(void *opaque, uint8_t *buf, int buf_size), int64_t (*seek)(void *opaque, int64_t offset, int whence)),
        (buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek))
FORWARD_VOID(LIBAVFORMAT, avio_context_free, (AVIOContext **s), (s))
FORWARD(LIBAVFORMAT, int, avio_open2, (AVIOContext **s, const char *url, int flags, const AVIOInterruptCB *int_cb, AVDictionary **options),
        (s, url, flags, int_cb, options))
FORWARD(LIBAVFORMAT, int, avio_closep, (AVIOContext **s), (s))
FORWARD_VOID(LIBAVFORMAT, avio_flush, (AVIOContext *s), (s))

// libswresample (a microphone's samples: conversion to the encoder's format, drift compensation)
FORWARD(LIBSWRESAMPLE, int, swr_alloc_set_opts2, (struct SwrContext **ps, AVChannelLayout *out_ch_layout, enum AVSampleFormat out_sample_fmt, int out_sample_rate,
         AVChannelLayout *in_ch_layout, enum AVSampleFormat in_sample_fmt, int in_sample_rate, int log_offset, void *log_ctx),
        (ps, out_ch_layout, out_sample_fmt, out_sample_rate, in_ch_layout, in_sample_fmt, in_sample_rate, log_offset, log_ctx))
FORWARD(LIBSWRESAMPLE, int, swr_init, (struct SwrContext *s), (s))
FORWARD_VOID(LIBSWRESAMPLE, swr_free, (struct SwrContext **s), (s))
FORWARD(LIBSWRESAMPLE, int, swr_convert, (struct SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count), (s, out, out_count, in, in_count))
FORWARD(LIBSWRESAMPLE, int, swr_set_compensation, (struct SwrContext *s, int sample_delta, int compensation_distance), (s, sample_delta, compensation_distance))
FORWARD(LIBSWRESAMPLE, int64_t, swr_get_delay, (struct SwrContext *s, int64_t base), (s, base))

// libva (VA-API: what the driver offers, and pictures uploaded through its images)
FORWARD(LIBVA, const char *, vaQueryVendorString, (VADisplay dpy), (dpy))
FORWARD(LIBVA, int, vaMaxNumProfiles, (VADisplay dpy), (dpy))
FORWARD(LIBVA, VAStatus, vaQueryConfigProfiles, (VADisplay dpy, VAProfile *profile_list, int *num_profiles), (dpy, profile_list, num_profiles))
FORWARD(LIBVA, int, vaMaxNumEntrypoints, (VADisplay dpy), (dpy))
FORWARD(LIBVA, const char *, vaProfileStr, (VAProfile profile), (profile))
FORWARD(LIBVA, VAStatus, vaQueryConfigEntrypoints, (VADisplay dpy, VAProfile profile, VAEntrypoint *entrypoint_list, int *num_entrypoints),
        (dpy, profile, entrypoint_list, num_entrypoints))
FORWARD(LIBVA, const char *, vaEntrypointStr, (VAEntrypoint entrypoint), (entrypoint))
FORWARD(LIBVA, VAStatus, vaGetConfigAttributes, (VADisplay dpy, VAProfile profile, VAEntrypoint entrypoint, VAConfigAttrib *attrib_list, int num_attribs),
        (dpy, profile, entrypoint, attrib_list, num_attribs))
FORWARD(LIBVA, VAStatus, vaCreateImage, (VADisplay dpy, VAImageFormat *format, int width, int height, VAImage *image), (dpy, format, width, height, image))
FORWARD(LIBVA, VAStatus, vaDeriveImage, (VADisplay dpy, VASurfaceID surface, VAImage *image), (dpy, surface, image))
FORWARD(LIBVA, VAStatus, vaDestroyImage, (VADisplay dpy, VAImageID image), (dpy, image))
FORWARD(LIBVA, VAStatus, vaMapBuffer, (VADisplay dpy, VABufferID buf_id, void **pbuf), (dpy, buf_id, pbuf))
FORWARD(LIBVA, VAStatus, vaUnmapBuffer, (VADisplay dpy, VABufferID buf_id), (dpy, buf_id))
FORWARD(LIBVA, VAStatus, vaPutImage, (VADisplay dpy, VASurfaceID surface, VAImageID image, int src_x, int src_y, unsigned int src_width,
         unsigned int src_height, int dest_x, int dest_y, unsigned int dest_width, unsigned int dest_height),
        (dpy, surface, image, src_x, src_y, src_width, src_height, dest_x, dest_y, dest_width, dest_height))
FORWARD(LIBVA, const char *, vaErrorStr, (VAStatus error_status), (error_status))
