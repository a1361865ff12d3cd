#ifndef CAMREC_CJPEG_H
#define CAMREC_CJPEG_H

// libjpeg-turbo (Debian's libjpeg62-turbo; libjpeg62-turbo-dev for the header), opened on first use like
// libav*: MJPEG cameras and `--input-format mjpeg`. A JPEG is decoded as its planes stand (raw data: no
// upsampling, no colour conversion), one strip of rows at a time into buffers the decoder keeps, for
// camrec to convert each into its pool buffer while the strip is in cache. libjpeg's longjmp never
// crosses into Swift: every call below catches it and returns a status.
#include <stddef.h>
#include <stdint.h>

typedef struct camrec_jpeg_decoder camrec_jpeg_decoder;

enum {
    CAMREC_JPEG_OK = 0,
    // libjpeg refused the data (its own words in camrec_jpeg_message).
    CAMREC_JPEG_FAILED = -1,
    // libjpeg warned of damaged data (bad Huffman code, data cut short, a marker where data was due): the
    // picture is not whole. Decoding stops at the first such warning.
    CAMREC_JPEG_DAMAGED = -2,
    // A JPEG camrec does not convert: RGB, CMYK or YCCK, or a chroma sampling that is not luma's halved
    // or quartered (the message says which).
    CAMREC_JPEG_UNSUPPORTED = -3,
};

// What camrec_jpeg_read_header found, and (after camrec_jpeg_start) where each strip lands.
typedef struct {
    int width, height;
    // 1: luma only; 3: Y, Cb, Cr.
    int components;
    // log2 of luma's samples per chroma sample, across and down.
    int chroma_shift_x, chroma_shift_y;
    // 0 when a comment says the samples are limited range (CS=ITU601, as libavcodec reads it).
    int full_range;
    // Luma rows per strip (8 times the largest vertical sampling factor: 8 or 16 for cameras).
    int strip_rows;
    // The strip's planes (the decoder's own memory, kept across pictures) and their strides.
    const uint8_t *planes[3];
    size_t strides[3];
} camrec_jpeg_picture;

// A decoder for many pictures in turn, or NULL with the one-line reason (the Debian package to install)
// in `error`.
camrec_jpeg_decoder *camrec_jpeg_decoder_create(char *error, size_t size);
void camrec_jpeg_decoder_destroy(camrec_jpeg_decoder *decoder);

// Reads the headers of the `size` bytes at `jpeg` (which must stay put until the picture is finished or
// abandoned): its size, components, sampling and range. CAMREC_JPEG_OK, or a failure; after any failure
// here or below, the decoder is ready for the next picture.
int camrec_jpeg_read_header(camrec_jpeg_decoder *decoder, const void *jpeg, size_t size, camrec_jpeg_picture *picture);

// Starts decoding the picture whose header was read (its size checked: a JPEG that claims a huge size
// is abandoned before this sets anything up for it), and fills in the strip.
int camrec_jpeg_start(camrec_jpeg_decoder *decoder, camrec_jpeg_picture *picture);

// Decodes the next strip into the picture's planes: the number of its luma rows that are the picture's
// (the last strip may hold fewer than strip_rows), 0 when every row was read, or a failure.
int camrec_jpeg_read_strip(camrec_jpeg_decoder *decoder);

// Reads to the end of the picture after its last strip: CAMREC_JPEG_OK or a failure.
int camrec_jpeg_finish(camrec_jpeg_decoder *decoder);

// Abandons the picture being decoded (after a failure of camrec's own).
void camrec_jpeg_abort(camrec_jpeg_decoder *decoder);

// The last failure in libjpeg's words (or what was not supported).
const char *camrec_jpeg_message(const camrec_jpeg_decoder *decoder);

#endif
