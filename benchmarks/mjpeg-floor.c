// The floor of the MJPEG line: libjpeg-turbo and libx264 called from C with camrec's settings, nothing
// else in the process (no runtime, no pool, no threads of its own). Each JPEG of the file is decoded as
// camrec decodes it (raw data: its planes as coded, the accurate integer IDCT, one strip of rows at a
// time) and each strip goes in one pass into one NV12 picture (full → limited range by camrec's
// arithmetic, chroma rows averaged to 4:2:0), which libx264 encodes on one thread, one slice a picture.
// Whatever a program doing this work needs beyond what this takes is that program's own.
//   mjpeg-floor INPUT.mjpeg OUT.h264   (4:2:2 or 4:2:0 JPEGs of one size, 30 fps; prints nothing)
// The input is read 1 MiB at a time; a JPEG ends at the first FF D9 after its start (true of ffmpeg's
// -f mjpeg output, whose tables hold no such pair).
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <x264.h>

struct failure { struct jpeg_error_mgr mgr; jmp_buf jump; };
static void on_error(j_common_ptr c) { longjmp(((struct failure *)c->err)->jump, 1); }
static void on_message(j_common_ptr c, int level) { (void)c; (void)level; }

static inline uint8_t limited_luma(uint8_t y) { return (uint8_t)(((y * 56281u + 33024u) >> 16) + 16); }
static inline uint8_t limited_chroma(uint8_t c) { return (uint8_t)(((c * 57567u + 4224u) >> 16) + 16); }

// One row each, with restrict so that gcc vectorizes them as Swift's compiler does camrec's pass.
static void luma_row(const uint8_t *restrict s, uint8_t *restrict y, int width) {
    for (int x = 0; x < width; x++) y[x] = limited_luma(s[x]);
}
static void chroma_row(const uint8_t *restrict cbTop, const uint8_t *restrict cbBottom, const uint8_t *restrict crTop,
                       const uint8_t *restrict crBottom, uint8_t *restrict uv, int half) {
    for (int x = 0; x < half; x++) {
        uv[2 * x] = limited_chroma((uint8_t)((cbTop[x] + cbBottom[x] + 1) >> 1));
        uv[2 * x + 1] = limited_chroma((uint8_t)((crTop[x] + crBottom[x] + 1) >> 1));
    }
}

static uint8_t *buffer;
static size_t capacity = 1 << 20, start, pending;

// The next JPEG in the file (valid until the next call), or NULL at the end.
static const uint8_t *next_jpeg(FILE *in, size_t *size) {
    for (;;) {
        uint8_t *p = buffer + start;
        size_t i = 0;
        while (i + 1 < pending && !(p[i] == 0xFF && p[i + 1] == 0xD8)) i++;
        if (i + 1 < pending) {
            size_t e = i + 2;
            while (e + 1 < pending && !(p[e] == 0xFF && p[e + 1] == 0xD9)) e++;
            if (e + 1 < pending) {
                *size = e + 2 - i;
                start += e + 2;
                pending -= e + 2;
                return p + i;
            }
        }
        memmove(buffer, buffer + start, pending);
        start = 0;
        if (pending == capacity) buffer = realloc(buffer, capacity *= 2);
        size_t n = fread(buffer + pending, 1, capacity - pending, in);
        if (n == 0) return NULL;
        pending += n;
    }
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: mjpeg-floor INPUT.mjpeg OUT.h264\n"); return 64; }
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    buffer = malloc(capacity);
    if (!in || !out || !buffer) { perror("mjpeg-floor"); return 1; }

    struct jpeg_decompress_struct d;
    struct failure failure;
    d.err = jpeg_std_error(&failure.mgr);
    failure.mgr.error_exit = on_error;
    failure.mgr.emit_message = on_message;
    jpeg_create_decompress(&d);

    x264_t *x264 = NULL;
    x264_picture_t picture, encoded;
    uint8_t *nv12 = NULL, *strip = NULL;
    JSAMPROW rows[3][32];
    JSAMPARRAY image[3] = {rows[0], rows[1], rows[2]};
    int width = 0, height = 0;
    long frames = 0;
    size_t size;
    const uint8_t *jpeg;
    while ((jpeg = next_jpeg(in, &size))) {
        if (setjmp(failure.jump)) { fprintf(stderr, "mjpeg-floor: JPEG %ld does not decode\n", frames); return 1; }
        jpeg_mem_src(&d, jpeg, (unsigned long)size);
        jpeg_read_header(&d, TRUE);
        d.raw_data_out = TRUE;
        d.dct_method = JDCT_ISLOW;
        jpeg_start_decompress(&d);
        int sy = d.comp_info[0].v_samp_factor / d.comp_info[1].v_samp_factor;  // 1: 4:2:2, 2: 4:2:0
        if (d.num_components != 3 || d.comp_info[0].h_samp_factor != 2 * d.comp_info[1].h_samp_factor || sy > 2) {
            fprintf(stderr, "mjpeg-floor: only 4:2:2 and 4:2:0 JPEGs\n");
            return 1;
        }
        size_t stride[3];
        for (int c = 0; c < 3; c++) stride[c] = d.comp_info[c].width_in_blocks * DCTSIZE;
        int strip_rows = d.max_v_samp_factor * DCTSIZE;
        if (!x264) {
            // libx264 as camrec sets it (Sources/Encoder/X264Encoder.swift) with --threads 1.
            width = (int)d.image_width;
            height = (int)d.image_height;
            x264_param_t p;
            x264_param_default_preset(&p, "ultrafast", "zerolatency");
            p.i_log_level = X264_LOG_ERROR;
            p.i_csp = X264_CSP_NV12; p.i_bitdepth = 8;
            p.rc.i_rc_method = X264_RC_ABR; p.rc.i_bitrate = 6000; p.rc.i_vbv_buffer_size = 6000; p.rc.i_vbv_max_bitrate = 6000;
            p.i_keyint_max = p.i_keyint_min = 30; p.i_bframe = 0;
            x264_param_apply_profile(&p, "high");
            p.i_width = width; p.i_height = height; p.i_fps_num = 30; p.i_fps_den = 1;
            p.i_timebase_num = 1; p.i_timebase_den = 30;
            p.i_threads = 1; p.b_open_gop = 1; p.i_slice_count = 0; p.vui.b_fullrange = 0;
            x264_param_parse(&p, "scenecut", "0"); x264_param_parse(&p, "aud", "0");
            x264_param_parse(&p, "sliced-threads", "0"); x264_param_parse(&p, "slices", "1");
            x264 = x264_encoder_open(&p);
            nv12 = malloc((size_t)width * height * 3 / 2);
            strip = malloc((stride[0] + stride[1] + stride[2]) * (size_t)strip_rows);
            if (!x264 || !nv12 || !strip) { fprintf(stderr, "mjpeg-floor: libx264 did not open\n"); return 1; }
            x264_picture_init(&picture);
            picture.img.i_csp = X264_CSP_NV12; picture.img.i_plane = 2;
            picture.img.plane[0] = nv12; picture.img.plane[1] = nv12 + (size_t)width * height;
            picture.img.i_stride[0] = picture.img.i_stride[1] = width;
        }
        if ((int)d.image_width != width || (int)d.image_height != height) { fprintf(stderr, "mjpeg-floor: sizes differ\n"); return 1; }
        uint8_t *next = strip;
        for (int c = 0; c < 3; c++) {
            for (int r = 0; r < d.comp_info[c].v_samp_factor * DCTSIZE; r++) rows[c][r] = next + r * stride[c];
            next += stride[c] * d.comp_info[c].v_samp_factor * DCTSIZE;
        }
        while (d.output_scanline < d.output_height) {
            int first = (int)d.output_scanline;
            jpeg_read_raw_data(&d, image, (JDIMENSION)strip_rows);
            int n = height - first < strip_rows ? height - first : strip_rows;
            for (int r = 0; r < n; r++) luma_row(rows[0][r], nv12 + (size_t)(first + r) * width, width);
            for (int r = 0; r < (n + 1) / 2; r++) {
                // 4:2:2: two chroma rows into one; 4:2:0: the row as it is.
                chroma_row(rows[1][2 * r / sy], rows[1][(2 * r + 1) / sy], rows[2][2 * r / sy], rows[2][(2 * r + 1) / sy],
                           nv12 + (size_t)width * height + (size_t)(first / 2 + r) * width, width / 2);
            }
        }
        jpeg_finish_decompress(&d);
        picture.i_pts = frames++;
        x264_nal_t *nal;
        int count;
        int bytes = x264_encoder_encode(x264, &nal, &count, &picture, &encoded);
        if (bytes > 0) fwrite(nal[0].p_payload, 1, (size_t)bytes, out);
    }
    if (!x264) { fprintf(stderr, "mjpeg-floor: no JPEG in %s\n", argv[1]); return 1; }
    while (x264_encoder_delayed_frames(x264)) {
        x264_nal_t *nal;
        int count;
        int bytes = x264_encoder_encode(x264, &nal, &count, NULL, &encoded);
        if (bytes > 0) fwrite(nal[0].p_payload, 1, (size_t)bytes, out);
    }
    x264_encoder_close(x264);
    jpeg_destroy_decompress(&d);
    return fclose(out) != 0;
}
