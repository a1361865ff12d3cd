// The memory and CPU floor of the benchmark's encoding lines: libx264 (and libx265) called from C with
// camrec's settings, nothing else in the process (no runtime, no pool, no threads of its own). The raw
// YUYV file is converted two rows at a time into one picture, which is given to each encoder in turn.
// Whatever a program doing this work needs beyond what this peaks at is that program's own.
//   encoder-floor [-t THREADS] INPUT.yuyv FRAMES OUT.h264            libx264 alone, NV12 (camrec's single line)
//   encoder-floor [-t THREADS] INPUT.yuyv FRAMES OUT.h264 OUT.h265   libx264 then libx265, one I420 picture
// THREADS is libx264's thread count with one slice per picture: 1 (camrec's default) or N frame threads,
// 0 for x264's own choice. libx265 always has one frame thread, as camrec and the benchmark ask.
// 1920x1080, 30 fps; prints nothing. Built with -DFLOOR_X264_ONLY it links libx264 alone (as camrec's raw
// H.264 line maps no libx265) and takes the first form only.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x264.h>
#ifndef FLOOR_X264_ONLY
#include <x265.h>
#endif

enum { W = 1920, H = 1080 };

#ifndef FLOOR_X264_ONLY
static void write_x265(x265_nal *nal, uint32_t count, FILE *out) {
    for (uint32_t i = 0; i < count; i++) fwrite(nal[i].payload, 1, nal[i].sizeBytes, out);
}
#endif

int main(int argc, char **argv) {
    int threads = 1;
    if (argc > 2 && strcmp(argv[1], "-t") == 0) { threads = atoi(argv[2]); argc -= 2; argv += 2; }
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: encoder-floor [-t THREADS] INPUT FRAMES OUT.h264 [OUT.h265]\n");
        return 64;
    }
    int dual = argc == 5, nv12 = !dual;
#ifdef FLOOR_X264_ONLY
    if (dual) { fprintf(stderr, "encoder-floor: built with libx264 only\n"); return 64; }
#endif
    long frames = strtol(argv[2], NULL, 10);
    FILE *in = fopen(argv[1], "rb"), *out264 = fopen(argv[3], "wb"), *out265 = dual ? fopen(argv[4], "wb") : NULL;
    uint8_t *rows = malloc(W * 2 * 2), *picture = malloc(W * H * 3 / 2);
    if (!in || !out264 || (dual && !out265) || !rows || !picture || frames < 1) { perror("encoder-floor"); return 1; }
    uint8_t *cb = picture + W * H, *cr = cb + W * H / 4;

    // libx264 as camrec sets it (X264Encoder): ultrafast, zerolatency, one slice per picture (so frame
    // threads, not sliced ones), one second of VBV, IDRs every 30 frames, no B-frames.
    x264_param_t p;
    x264_param_default_preset(&p, "ultrafast", "zerolatency");
    p.i_csp = nv12 ? X264_CSP_NV12 : X264_CSP_I420; p.i_width = W; p.i_height = H; p.i_fps_num = 30; p.i_fps_den = 1;
    p.i_timebase_num = 1; p.i_timebase_den = 30; p.i_log_level = X264_LOG_ERROR; p.i_threads = threads;
    p.rc.i_rc_method = X264_RC_ABR; p.rc.i_bitrate = 6000; p.rc.i_vbv_max_bitrate = 6000; p.rc.i_vbv_buffer_size = 6000;
    p.i_keyint_max = p.i_keyint_min = 30; p.i_bframe = 0; p.b_open_gop = 1;
    x264_param_parse(&p, "scenecut", "0"); x264_param_parse(&p, "sliced-threads", "0"); x264_param_parse(&p, "slices", "1");
    x264_param_apply_profile(&p, "high");
    x264_t *x264 = x264_encoder_open(&p);

#ifndef FLOOR_X264_ONLY
    // libx265 as the benchmark's ffmpeg and camrec set it: ultrafast, zerolatency, one frame thread.
    x265_param *q = NULL;
    x265_encoder *x265 = NULL;
    x265_picture *in265 = NULL;
    if (dual) {
        q = x265_param_alloc();
        x265_param_default_preset(q, "ultrafast", "zerolatency");
        q->sourceWidth = W; q->sourceHeight = H; q->fpsNum = 30; q->fpsDenom = 1; q->internalCsp = X265_CSP_I420;
        q->logLevel = X265_LOG_ERROR; q->keyframeMax = q->keyframeMin = 30; q->bframes = 0; q->bOpenGOP = 0;
        q->scenecutThreshold = 0; q->bRepeatHeaders = 1; q->frameNumThreads = 1;
        q->rc.rateControlMode = X265_RC_ABR; q->rc.bitrate = 6000; q->rc.vbvMaxBitrate = 6000; q->rc.vbvBufferSize = 6000;
        q->rc.vbvBufferInit = 4500;  // kbit: libavcodec starts the VBV 3/4 full, and camrec does as it does
        x265 = x265_encoder_open(q);
    }
    if (dual && !x265) { fprintf(stderr, "encoder-floor: libx265 did not open\n"); return 1; }
#endif
    if (!x264) { fprintf(stderr, "encoder-floor: libx264 did not open\n"); return 1; }

    x264_picture_t in264, out;
    x264_picture_init(&in264);
    in264.img.i_csp = p.i_csp;
    in264.img.i_plane = nv12 ? 2 : 3;
    in264.img.plane[0] = picture; in264.img.plane[1] = cb; in264.img.plane[2] = cr;
    in264.img.i_stride[0] = W; in264.img.i_stride[1] = nv12 ? W : W / 2; in264.img.i_stride[2] = W / 2;
#ifndef FLOOR_X264_ONLY
    if (dual) {
        in265 = x265_picture_alloc();
        x265_picture_init(q, in265);
        for (int i = 0; i < 3; i++) { in265->planes[i] = in264.img.plane[i]; in265->stride[i] = in264.img.i_stride[i]; }
    }
    x265_nal *nal265; uint32_t count265;
#endif

    x264_nal_t *nal264; int count264;
    for (long f = 0; f < frames; f++) {
        for (int y = 0; y < H; y += 2) {
            if (fread(rows, W * 2, 2, in) != 2) { fprintf(stderr, "encoder-floor: the input is short\n"); return 1; }
            for (int x = 0; x < W; x++) { picture[y * W + x] = rows[2 * x]; picture[(y + 1) * W + x] = rows[2 * W + 2 * x]; }
            for (int x = 0; x < W / 2; x++) {
                uint8_t u = (uint8_t)((rows[4 * x + 1] + rows[2 * W + 4 * x + 1] + 1) / 2);
                uint8_t v = (uint8_t)((rows[4 * x + 3] + rows[2 * W + 4 * x + 3] + 1) / 2);
                if (nv12) { cb[y / 2 * W + 2 * x] = u; cb[y / 2 * W + 2 * x + 1] = v; }
                else { cb[y / 2 * W / 2 + x] = u; cr[y / 2 * W / 2 + x] = v; }
            }
        }
        in264.i_pts = f;
        int size = x264_encoder_encode(x264, &nal264, &count264, &in264, &out);
        if (size > 0) fwrite(nal264[0].p_payload, 1, (size_t)size, out264);
#ifndef FLOOR_X264_ONLY
        if (dual) {
            in265->pts = f;
            if (x265_encoder_encode(x265, &nal265, &count265, in265, NULL) > 0) write_x265(nal265, count265, out265);
        }
#endif
    }
    while (x264_encoder_delayed_frames(x264)) {
        int size = x264_encoder_encode(x264, &nal264, &count264, NULL, &out);
        if (size > 0) fwrite(nal264[0].p_payload, 1, (size_t)size, out264);
    }
#ifndef FLOOR_X264_ONLY
    if (dual) while (x265_encoder_encode(x265, &nal265, &count265, NULL, NULL) > 0) write_x265(nal265, count265, out265);
    if (dual) x265_encoder_close(x265);
#endif
    x264_encoder_close(x264);
    return fclose(out264) || (dual && fclose(out265));
}
