#ifdef __linux__
#include "CImagoCodecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

// A destination manager of our own rather than jpeg_mem_dest: when libjpeg fails
// after jpeg_mem_dest has grown its buffer, the grown buffer is held only in
// libjpeg's private state (the caller's pointer is updated by term_destination alone,
// and jpeg_destroy does not free it), so an error would leak it and leave the
// caller's pointer dangling. Here the buffer is always ours to free.
typedef struct {
    struct jpeg_destination_mgr pub;
    uint8_t *buffer;
    size_t capacity;
    size_t size;
} imago_jpeg_destination;

typedef struct {
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr errors;
    imago_jpeg_destination destination;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int created;
} imago_jpeg_encoder;

static void imago_jpeg_encode_error_exit(j_common_ptr cinfo) {
    imago_jpeg_encoder *encoder = (imago_jpeg_encoder *)cinfo->client_data;
    cinfo->err->format_message(cinfo, encoder->message);
    longjmp(encoder->jump, 1);
}

// The compressor's warnings (none concern valid input) are not worth a stderr line
// from a library.
static void imago_jpeg_encode_output_message(j_common_ptr cinfo) {
    (void)cinfo;
}

static void imago_jpeg_destination_init(j_compress_ptr cinfo) {
    imago_jpeg_destination *d = (imago_jpeg_destination *)cinfo->dest;
    // A guess of one byte in eight of RGB input covers most photos at ordinary
    // qualities in one allocation; the buffer doubles when it does not. The cap keeps
    // a huge image from reserving more than it is likely to need up front.
    size_t guess = (size_t)cinfo->image_width * cinfo->image_height * 3 / 8 + 4096;
    if (guess > ((size_t)64 << 20)) guess = (size_t)64 << 20;
    d->buffer = malloc(guess);
    if (d->buffer == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    d->capacity = guess;
    d->pub.next_output_byte = d->buffer;
    d->pub.free_in_buffer = guess;
}

// Called when the buffer is full (libjpeg's contract: the whole buffer is data).
static boolean imago_jpeg_destination_empty(j_compress_ptr cinfo) {
    imago_jpeg_destination *d = (imago_jpeg_destination *)cinfo->dest;
    if (d->capacity > SIZE_MAX / 2) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
    size_t capacity = d->capacity * 2;
    uint8_t *grown = realloc(d->buffer, capacity);
    // On failure the old buffer is still ours and is freed with the encoder.
    if (grown == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
    d->pub.next_output_byte = grown + d->capacity;
    d->pub.free_in_buffer = capacity - d->capacity;
    d->buffer = grown;
    d->capacity = capacity;
    return TRUE;
}

static void imago_jpeg_destination_term(j_compress_ptr cinfo) {
    imago_jpeg_destination *d = (imago_jpeg_destination *)cinfo->dest;
    d->size = d->capacity - d->pub.free_in_buffer;
}

// Every libjpeg call happens here, below the jump point. No local of this function
// is read after a longjmp (C leaves such locals indeterminate): all state lives in
// `e`, on the heap, where the caller finds it to clean up.
static int imago_jpeg_encode_run(imago_jpeg_encoder *e, const uint8_t *pixels, uint32_t width,
                                 uint32_t height, size_t stride,
                                 const imago_jpeg_encode_options *options) {
    if (setjmp(e->jump)) return -1;
    struct jpeg_compress_struct *c = &e->cinfo;
    jpeg_create_compress(c);
    e->created = 1;
    e->destination.pub.init_destination = imago_jpeg_destination_init;
    e->destination.pub.empty_output_buffer = imago_jpeg_destination_empty;
    e->destination.pub.term_destination = imago_jpeg_destination_term;
    c->dest = &e->destination.pub;

    c->image_width = width;
    c->image_height = height;
    c->input_components = 4;
    c->in_color_space = JCS_EXT_RGBX;
    jpeg_set_defaults(c);
    // Baseline quantisation tables (8-bit entries) below quality 25, so every decoder
    // reads the file.
    jpeg_set_quality(c, options->quality, TRUE);
    // Optimal Huffman tables cost a second pass over the coefficients and save a few
    // per cent of the file, losslessly.
    c->optimize_coding = TRUE;
    // jpeg_set_defaults chose 2×2 luma sampling (4:2:0); 4:4:4 samples chroma like luma.
    if (!options->subsample_chroma) {
        c->comp_info[0].h_samp_factor = 1;
        c->comp_info[0].v_samp_factor = 1;
    }
    if (options->progressive) jpeg_simple_progression(c);

    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        JSAMPROW rows[16];
        JDIMENSION count = 0;
        for (; count < 16 && c->next_scanline + count < c->image_height; count++) {
            rows[count] = (JSAMPROW)(pixels + (size_t)(c->next_scanline + count) * stride);
        }
        jpeg_write_scanlines(c, rows, count);
    }
    jpeg_finish_compress(c);
    return 0;
}

int imago_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                      const imago_jpeg_encode_options *options, imago_jpeg_encoded *result) {
    memset(result, 0, sizeof *result);
    imago_jpeg_encoder *e = calloc(1, sizeof(imago_jpeg_encoder));
    if (e == NULL) {
        snprintf(result->message, sizeof result->message, "out of memory");
        result->message_is_own = 1;
        return -1;
    }
    e->cinfo.err = jpeg_std_error(&e->errors);
    e->errors.error_exit = imago_jpeg_encode_error_exit;
    e->errors.output_message = imago_jpeg_encode_output_message;
    e->cinfo.client_data = e;

    int status = imago_jpeg_encode_run(e, pixels, width, height, stride, options);
    if (e->created) jpeg_destroy_compress(&e->cinfo);
    if (status == 0) {
        result->data = e->destination.buffer;
        result->size = e->destination.size;
    } else {
        free(e->destination.buffer);
        snprintf(result->message, sizeof result->message, "%s", e->message);
    }
    free(e);
    return status;
}
#endif
