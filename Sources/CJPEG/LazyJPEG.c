// libjpeg-turbo opened on first use (dlopen + dlsym), like libav* in Sources/CFFmpeg/LazyLibav.c, and
// the raw-data decode camrec needs from it. The libjpeg API rather than TurboJPEG's: decoding 300
// 1080p 4:2:2 JPEGs to planes took 0.77 s of CPU with jpeg_read_raw_data, 0.93 s with
// tjDecompressToYUVPlanes (which also allocates its row tables per picture) and 1.5 s with libavcodec's
// mjpeg decoder, on the same machine in one run (benchmarks/compare-mjpeg.sh's input).
//
// libjpeg reports errors by calling error_exit, which must not return; here it longjmps back into the
// function below that called libjpeg, which abandons the picture and returns a status. Warnings that
// mean the picture is not whole (a bad Huffman code, data cut short) end the picture the same way, at
// once: a damaged picture costs no more decoding than its bytes up to the damage.
//
// libjpeg's memory manager takes each picture's working memory from malloc at its start and frees it at
// its end (2 calls, about 16 KiB, a picture). Its alloc_small/alloc_large/free_pool are methods an
// application may replace: here the picture's requests come from an arena the decoder keeps, emptied
// when libjpeg frees the picture's pool, so a steady stream of pictures allocates nothing.
#include "CJPEG.h"
#include "CLazyLoad.h"

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
// jpeglib.h wants FILE and size_t declared first.
#include <jpeglib.h>
#include <jerror.h>

static const char *const library_name = "libjpeg.so.62";
static const char *const package_name = "libjpeg62-turbo";

// The libjpeg functions camrec calls, looked up once.
static struct {
    struct jpeg_error_mgr *(*std_error)(struct jpeg_error_mgr *);
    void (*create_decompress)(j_decompress_ptr, int, size_t);
    void (*destroy_decompress)(j_decompress_ptr);
    int (*read_header)(j_decompress_ptr, boolean);
    boolean (*start_decompress)(j_decompress_ptr);
    JDIMENSION (*read_raw_data)(j_decompress_ptr, JSAMPIMAGE, JDIMENSION);
    boolean (*finish_decompress)(j_decompress_ptr);
    void (*abort_decompress)(j_decompress_ptr);
    boolean (*resync_to_restart)(j_decompress_ptr, int);
} jpeg;
static int loaded;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static int load(char *error, size_t size) {
    pthread_mutex_lock(&load_lock);
    if (!loaded) {
        void *handle = camrec_open_library(library_name, package_name, error, size);
        if (!handle) {
            pthread_mutex_unlock(&load_lock);
            return -1;
        }
        struct { void **slot; const char *name; } symbols[] = {
            {(void **)&jpeg.std_error, "jpeg_std_error"},
            {(void **)&jpeg.create_decompress, "jpeg_CreateDecompress"},
            {(void **)&jpeg.destroy_decompress, "jpeg_destroy_decompress"},
            {(void **)&jpeg.read_header, "jpeg_read_header"},
            {(void **)&jpeg.start_decompress, "jpeg_start_decompress"},
            {(void **)&jpeg.read_raw_data, "jpeg_read_raw_data"},
            {(void **)&jpeg.finish_decompress, "jpeg_finish_decompress"},
            {(void **)&jpeg.abort_decompress, "jpeg_abort_decompress"},
            {(void **)&jpeg.resync_to_restart, "jpeg_resync_to_restart"},
        };
        for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
            *symbols[i].slot = dlsym(handle, symbols[i].name);
            if (!*symbols[i].slot) {
                camrec_describe_load_failure(symbols[i].name, dlerror(), package_name, error, size);
                pthread_mutex_unlock(&load_lock);
                return -1;
            }
        }
        loaded = 1;
    }
    pthread_mutex_unlock(&load_lock);
    return 0;
}

// Up to 4 blocks of 8 rows down per component (the largest sampling factor JPEG allows).
enum { max_strip_rows = 4 * DCTSIZE };

struct camrec_jpeg_decoder {
    // First, so that libjpeg's pointers to it are pointers to the decoder.
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr errors;
    struct jpeg_source_mgr source;
    jmp_buf jump;
    int outcome;
    char message[JMSG_LENGTH_MAX];
    // The strip: each component's rows, in one allocation grown only for a larger picture.
    uint8_t *strip;
    size_t strip_bytes;
    JSAMPROW rows[3][max_strip_rows];
    JSAMPARRAY image[3];
    int strip_rows;
    // The picture's working memory (JPOOL_IMAGE); a request that does not fit goes to libjpeg's own.
    uint8_t *arena;
    size_t arena_used;
    void *(*library_alloc_small)(j_common_ptr, int, size_t);
    void *(*library_alloc_large)(j_common_ptr, int, size_t);
    void (*library_free_pool)(j_common_ptr, int);
};

// Measured at 1080p 4:2:2: about 16 KiB a picture; a larger picture's extra requests go to libjpeg.
enum { arena_bytes = 256 * 1024, arena_alignment = 64 };

static void *arena_take(camrec_jpeg_decoder *decoder, size_t size) {
    size_t start = (decoder->arena_used + arena_alignment - 1) & ~(size_t)(arena_alignment - 1);
    if (start > arena_bytes || size > arena_bytes - start) return NULL;
    decoder->arena_used = start + size;
    return decoder->arena + start;
}

static void *alloc_small(j_common_ptr cinfo, int pool, size_t size) {
    camrec_jpeg_decoder *decoder = (camrec_jpeg_decoder *)cinfo;
    void *taken = pool == JPOOL_IMAGE ? arena_take(decoder, size) : NULL;
    return taken ? taken : decoder->library_alloc_small(cinfo, pool, size);
}

static void *alloc_large(j_common_ptr cinfo, int pool, size_t size) {
    camrec_jpeg_decoder *decoder = (camrec_jpeg_decoder *)cinfo;
    void *taken = pool == JPOOL_IMAGE ? arena_take(decoder, size) : NULL;
    return taken ? taken : decoder->library_alloc_large(cinfo, pool, size);
}

static void free_pool(j_common_ptr cinfo, int pool) {
    camrec_jpeg_decoder *decoder = (camrec_jpeg_decoder *)cinfo;
    if (pool == JPOOL_IMAGE) decoder->arena_used = 0;
    decoder->library_free_pool(cinfo, pool);
}

static void fail(j_common_ptr cinfo, int outcome) {
    camrec_jpeg_decoder *decoder = (camrec_jpeg_decoder *)cinfo;
    decoder->outcome = outcome;
    cinfo->err->format_message(cinfo, decoder->message);
    longjmp(decoder->jump, 1);
}

static void on_error(j_common_ptr cinfo) {
    if (cinfo->err->msg_code == JERR_BAD_PRECISION) {
        // This libjpeg decodes 8-bit samples, as camrec converts: a 12-bit JPEG is not damage.
        camrec_jpeg_decoder *decoder = (camrec_jpeg_decoder *)cinfo;
        decoder->outcome = CAMREC_JPEG_UNSUPPORTED;
        snprintf(decoder->message, sizeof decoder->message, "a %d-bit JPEG", cinfo->err->msg_parm.i[0]);
        longjmp(decoder->jump, 1);
    }
    fail(cinfo, CAMREC_JPEG_FAILED);
}

// Warnings (level -1) that leave the picture whole: bytes between segments (some cameras put them
// before the end-of-image marker), an unknown JFIF version, Adobe transform or ICC profile. Every other
// warning is damage. Trace messages (level >= 0) are ignored; nothing is ever printed.
static void on_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;
    switch (cinfo->err->msg_code) {
    case JWRN_EXTRANEOUS_DATA: case JWRN_JFIF_MAJOR: case JWRN_ADOBE_XFORM: case JWRN_BOGUS_ICC:
        return;
    default:
        fail(cinfo, CAMREC_JPEG_DAMAGED);
    }
}

static void print_nothing(j_common_ptr cinfo) { (void)cinfo; }

// The source: the caller's bytes, as they are. Running out of them before the end-of-image marker is
// damage (the warning above ends the picture).
static void source_init(j_decompress_ptr cinfo) { (void)cinfo; }
static void source_term(j_decompress_ptr cinfo) { (void)cinfo; }
static boolean source_fill(j_decompress_ptr cinfo) {
    static const JOCTET end_of_image[2] = {0xFF, JPEG_EOI};
    WARNMS(cinfo, JWRN_JPEG_EOF);
    cinfo->src->next_input_byte = end_of_image;
    cinfo->src->bytes_in_buffer = 2;
    return TRUE;
}
static void source_skip(j_decompress_ptr cinfo, long count) {
    if (count <= 0) return;
    if ((size_t)count > cinfo->src->bytes_in_buffer) {
        cinfo->src->bytes_in_buffer = 0;
        source_fill(cinfo);
        return;
    }
    cinfo->src->next_input_byte += count;
    cinfo->src->bytes_in_buffer -= (size_t)count;
}

camrec_jpeg_decoder *camrec_jpeg_decoder_create(char *error, size_t size) {
    if (load(error, size) != 0) return NULL;
    camrec_jpeg_decoder *decoder = calloc(1, sizeof *decoder);
    uint8_t *arena = aligned_alloc(arena_alignment, arena_bytes);
    if (!decoder || !arena) {
        free(decoder);
        free(arena);
        snprintf(error, size, "out of memory for the JPEG decoder");
        return NULL;
    }
    decoder->arena = arena;
    decoder->cinfo.err = jpeg.std_error(&decoder->errors);
    decoder->errors.error_exit = on_error;
    decoder->errors.emit_message = on_message;
    decoder->errors.output_message = print_nothing;
    if (setjmp(decoder->jump)) {
        // A libjpeg that is not the one camrec was built against (its structure size differs).
        snprintf(error, size, "cannot use %s (%s); install Debian's %s (apt-get install %s)", library_name,
                 decoder->message, package_name, package_name);
        free(decoder->arena);
        free(decoder);
        return NULL;
    }
    jpeg.create_decompress(&decoder->cinfo, JPEG_LIB_VERSION, sizeof decoder->cinfo);
    struct jpeg_memory_mgr *memory = decoder->cinfo.mem;
    decoder->library_alloc_small = memory->alloc_small;
    decoder->library_alloc_large = memory->alloc_large;
    decoder->library_free_pool = memory->free_pool;
    memory->alloc_small = alloc_small;
    memory->alloc_large = alloc_large;
    memory->free_pool = free_pool;
    decoder->source.init_source = source_init;
    decoder->source.fill_input_buffer = source_fill;
    decoder->source.skip_input_data = source_skip;
    decoder->source.resync_to_restart = jpeg.resync_to_restart;
    decoder->source.term_source = source_term;
    decoder->cinfo.src = &decoder->source;
    return decoder;
}

void camrec_jpeg_decoder_destroy(camrec_jpeg_decoder *decoder) {
    if (!decoder) return;
    jpeg.destroy_decompress(&decoder->cinfo);
    free(decoder->strip);
    free(decoder->arena);
    free(decoder);
}

// Every function that calls into libjpeg starts with this: a longjmp from the handlers above lands here,
// abandons the picture (the decoder is then ready for the next one) and returns the outcome.
#define CATCH_FAILURE(decoder)                                     \
    if (setjmp((decoder)->jump)) {                                 \
        jpeg.abort_decompress(&(decoder)->cinfo);                  \
        return (decoder)->outcome;                                 \
    }

// Abandons the picture for a reason of camrec's own.
static int give_up(camrec_jpeg_decoder *decoder, int outcome, const char *why) {
    jpeg.abort_decompress(&decoder->cinfo);
    snprintf(decoder->message, sizeof decoder->message, "%s", why);
    return outcome;
}

static int unsupported(camrec_jpeg_decoder *decoder, const char *what) {
    return give_up(decoder, CAMREC_JPEG_UNSUPPORTED, what);
}

// A comment "CS=ITU601" before the scan says the samples are limited range (libavcodec's mjpeg reads it so).
static int says_limited_range(const uint8_t *p, size_t size) {
    size_t i = 2;
    while (i + 4 <= size && p[i] == 0xFF) {
        uint8_t marker = p[i + 1];
        if (marker == 0xFF) { i++; continue; }
        if (marker == 0xDA || marker == 0xD9) break;
        size_t length = (size_t)p[i + 2] << 8 | p[i + 3];
        if (marker == 0xFE && length >= 2 + 9 && i + 4 + 9 <= size && memcmp(p + i + 4, "CS=ITU601", 9) == 0) return 1;
        i += 2 + length;
    }
    return 0;
}

static int log2_ratio(int whole, int part) {
    if (part <= 0 || whole % part != 0) return -1;
    switch (whole / part) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    default: return -1;
    }
}

int camrec_jpeg_read_header(camrec_jpeg_decoder *decoder, const void *data, size_t size, camrec_jpeg_picture *picture) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    CATCH_FAILURE(decoder)
    decoder->source.next_input_byte = data;
    decoder->source.bytes_in_buffer = size;
    jpeg.read_header(cinfo, TRUE);
    memset(picture, 0, sizeof *picture);
    picture->width = (int)cinfo->image_width;
    picture->height = (int)cinfo->image_height;
    picture->components = cinfo->num_components;
    if (cinfo->jpeg_color_space == JCS_RGB) return unsupported(decoder, "an RGB JPEG");
    if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) return unsupported(decoder, "a CMYK JPEG");
    if (!(cinfo->jpeg_color_space == JCS_YCbCr && cinfo->num_components == 3) &&
        !(cinfo->jpeg_color_space == JCS_GRAYSCALE && cinfo->num_components == 1))
        return unsupported(decoder, "a JPEG in a colour space that is neither YCbCr nor grey");
    jpeg_component_info *c = cinfo->comp_info;
    if (cinfo->num_components == 3) {
        if (c[0].h_samp_factor != cinfo->max_h_samp_factor || c[0].v_samp_factor != cinfo->max_v_samp_factor ||
            c[1].h_samp_factor != c[2].h_samp_factor || c[1].v_samp_factor != c[2].v_samp_factor)
            return unsupported(decoder, "a JPEG whose chroma planes are sampled unlike each other or finer than luma");
        picture->chroma_shift_x = log2_ratio(c[0].h_samp_factor, c[1].h_samp_factor);
        picture->chroma_shift_y = log2_ratio(c[0].v_samp_factor, c[1].v_samp_factor);
        if (picture->chroma_shift_x < 0 || picture->chroma_shift_y < 0)
            return unsupported(decoder, "a JPEG with chroma sampled other than 1, 1/2 or 1/4 of luma");
    }
    picture->full_range = !says_limited_range(data, size);
    return CAMREC_JPEG_OK;
}

int camrec_jpeg_start(camrec_jpeg_decoder *decoder, camrec_jpeg_picture *picture) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    CATCH_FAILURE(decoder)
    // The planes as coded: no upsampling, no colour conversion. The accurate integer IDCT, as libavcodec's.
    cinfo->raw_data_out = TRUE;
    cinfo->dct_method = JDCT_ISLOW;
    jpeg.start_decompress(cinfo);
    // Each component's strip: its blocks across times 8 samples, its sampling factor times 8 rows.
    size_t strides[3] = {0}, needed = 0;
    for (int i = 0; i < cinfo->num_components; i++) {
        jpeg_component_info *c = &cinfo->comp_info[i];
        strides[i] = ((size_t)c->width_in_blocks * DCTSIZE + 63) & ~(size_t)63;
        needed += strides[i] * (size_t)(c->v_samp_factor * DCTSIZE);
    }
    if (needed > decoder->strip_bytes) {
        // The first picture, or a larger one than before: not per picture.
        free(decoder->strip);
        decoder->strip = aligned_alloc(64, needed);
        decoder->strip_bytes = decoder->strip ? needed : 0;
        if (!decoder->strip) return give_up(decoder, CAMREC_JPEG_FAILED, "out of memory");
    }
    uint8_t *next = decoder->strip;
    for (int i = 0; i < cinfo->num_components; i++) {
        int rows = cinfo->comp_info[i].v_samp_factor * DCTSIZE;
        for (int r = 0; r < rows; r++) decoder->rows[i][r] = next + (size_t)r * strides[i];
        decoder->image[i] = decoder->rows[i];
        picture->planes[i] = next;
        picture->strides[i] = strides[i];
        next += strides[i] * (size_t)rows;
    }
    decoder->strip_rows = cinfo->max_v_samp_factor * DCTSIZE;
    picture->strip_rows = decoder->strip_rows;
    return CAMREC_JPEG_OK;
}

int camrec_jpeg_read_strip(camrec_jpeg_decoder *decoder) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    CATCH_FAILURE(decoder)
    JDIMENSION first = cinfo->output_scanline;
    if (first >= cinfo->output_height) return 0;
    jpeg.read_raw_data(cinfo, decoder->image, (JDIMENSION)decoder->strip_rows);
    JDIMENSION left = cinfo->output_height - first;
    return (int)(left < (JDIMENSION)decoder->strip_rows ? left : (JDIMENSION)decoder->strip_rows);
}

int camrec_jpeg_finish(camrec_jpeg_decoder *decoder) {
    CATCH_FAILURE(decoder)
    jpeg.finish_decompress(&decoder->cinfo);
    return CAMREC_JPEG_OK;
}

void camrec_jpeg_abort(camrec_jpeg_decoder *decoder) {
    jpeg.abort_decompress(&decoder->cinfo);
}

const char *camrec_jpeg_message(const camrec_jpeg_decoder *decoder) {
    return decoder->message;
}
