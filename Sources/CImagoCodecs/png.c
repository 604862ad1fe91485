#ifdef __linux__
#include "CImagoCodecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>

struct imago_png {
    png_structp png;
    png_infop info;
    const uint8_t *data;
    size_t size;
    size_t offset;
    png_bytepp rows;
    char message[256];
    // Set before this file raises an error of its own through png_error, so that
    // `message` is not taken for libpng's.
    int message_is_own;
    uint64_t deadline;
    int timed_out;
    // Set when the caller converts the colours itself: libpng then leaves gAMA alone.
    int leaves_gamma;
    // Set when the caller takes 16-bit samples as stored, for a tone mapping that
    // needs their precision.
    int keeps_16;
};

static void imago_png_error(png_structp png, png_const_charp message) {
    imago_png *reader = (imago_png *)png_get_error_ptr(png);
    snprintf(reader->message, sizeof reader->message, "%s", message);
    png_longjmp(png, 1);
}

static void imago_png_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

static void imago_png_read(png_structp png, png_bytep out, size_t length) {
    imago_png *reader = (imago_png *)png_get_io_ptr(png);
    if (length > reader->size - reader->offset) {
        reader->message_is_own = 1;
        png_error(png, "the data ends before the image does");
    }
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
}

/* libpng reads an ancillary chunk whole into a buffer it allocates (and zeroes) at
   the chunk's declared length before reading a byte of it: a 1.4 KB file whose zTXt
   chunk claimed 1.7 GB took 1.7 GB (see imago_png_usable_size for chunks cut short).
   The text and palette-suggestion chunks, which Imago never reads, are skipped
   unread, whatever their size. */
static void imago_png_limit(png_structp png) {
    static const png_byte ignored[] = "tEXt\0zTXt\0iTXt\0sPLT\0";
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ignored, 4);
}

/* The length libpng may read: the data up to the first chunk other than IDAT that
   claims more bytes than are left. Such a chunk is cut short anyway, and libpng
   would allocate its whole claimed length first; image data is streamed, so a cut
   IDAT stays (what it holds is the partial image). */
static size_t imago_png_usable_size(const uint8_t *data, size_t size) {
    size_t offset = 8;
    while (size - offset >= 8 && offset < size) {
        const uint8_t *p = data + offset;
        size_t length = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
        int is_idat = memcmp(p + 4, "IDAT", 4) == 0;
        if (length > size - offset - 8) return is_idat ? size : offset;
        if (size - offset - 8 - length < 4) return size;
        offset += 12 + length;
    }
    return size;
}

imago_png *imago_png_create(const uint8_t *data, size_t size) {
    imago_png *reader = calloc(1, sizeof(imago_png));
    if (reader == NULL) return NULL;
    reader->data = data;
    reader->size = size > 8 ? imago_png_usable_size(data, size) : size;
    reader->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, imago_png_error, imago_png_warning);
    if (reader->png != NULL) reader->info = png_create_info_struct(reader->png);
    if (reader->info == NULL) {
        imago_png_destroy(reader);
        return NULL;
    }
    imago_png_limit(reader->png);
    png_set_read_fn(reader->png, reader, imago_png_read);
    return reader;
}

void imago_png_destroy(imago_png *reader) {
    if (reader == NULL) return;
    if (reader->png != NULL) png_destroy_read_struct(&reader->png, reader->info ? &reader->info : NULL, NULL);
    free(reader->rows);
    free(reader);
}

const char *imago_png_message(const imago_png *reader) {
    return reader->message;
}

int imago_png_message_is_own(const imago_png *reader) {
    return reader->message_is_own;
}

int imago_png_read_header(imago_png *reader, imago_png_info *info) {
    png_structp png = reader->png;
    png_infop pinfo = reader->info;
    if (setjmp(png_jmpbuf(png))) return -1;
    png_read_info(png, pinfo);
    memset(info, 0, sizeof *info);
    info->width = png_get_image_width(png, pinfo);
    info->height = png_get_image_height(png, pinfo);
    info->bit_depth = png_get_bit_depth(png, pinfo);
    info->color_type = png_get_color_type(png, pinfo);
    info->interlaced = png_get_interlace_type(png, pinfo) != PNG_INTERLACE_NONE;
    info->has_alpha = (info->color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, pinfo, PNG_INFO_tRNS) != 0;
    png_uint_32 exif_length = 0;
    png_bytep exif = NULL;
    if (png_get_eXIf_1(png, pinfo, &exif_length, &exif) != 0 && exif != NULL) {
        info->exif = exif;
        info->exif_length = exif_length;
    }
    png_charp icc_name = NULL;
    int compression = 0;
    png_bytep icc = NULL;
    png_uint_32 icc_length = 0;
    if (png_get_iCCP(png, pinfo, &icc_name, &compression, &icc, &icc_length) != 0 && icc != NULL) {
        info->icc = icc;
        info->icc_length = icc_length;
    }
    int intent = 0;
    info->srgb = png_get_sRGB(png, pinfo, &intent) != 0;
    double gamma = 0;
    if (png_get_gAMA(png, pinfo, &gamma) != 0) info->gamma = gamma;
    double *c = info->chromaticities;
    info->has_chromaticities = png_get_cHRM(png, pinfo, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7]) != 0;
    return 0;
}

// The pixel pass runs libpng's progressive (push) reader over a reader of its own:
// it decodes rows as their compressed bytes arrive, so a file that ends early still
// yields every row it holds, where the pull reader can only fail.
typedef struct {
    imago_png *reader;
    // Rows land in `rows`, or go one by one to `sink` (a non-interlaced image only).
    png_bytepp rows;
    imago_png_row_sink sink;
    // Or, for an interlaced image read pass by pass, to `pass_sink`.
    imago_png_pass_sink pass_sink;
    void *context;
    png_uint_32 width;
    png_uint_32 height;
    int rows_seen;
    int complete;
    int ended;
    int interlaced;
    // The last pass with pixels, and its rows: after them the image is whole.
    int last_pass;
    png_uint_32 last_pass_rows;
} imago_png_push;

static void imago_png_push_info(png_structp png, png_infop info) {
    imago_png_push *push = (imago_png_push *)png_get_progressive_ptr(png);
    int color_type = png_get_color_type(png, info);
    int wide = push->reader->keeps_16 && png_get_bit_depth(png, info) == 16;
    png_set_expand(png);
    if (!wide) png_set_scale_16(png);
    if ((color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
    if ((color_type & PNG_COLOR_MASK_ALPHA) == 0 && png_get_valid(png, info, PNG_INFO_tRNS) == 0) {
        png_set_filler(png, wide ? 0xFFFF : 0xFF, PNG_FILLER_AFTER);
    }
    // Files without gAMA (or with sRGB) are left as they are; a gAMA other than
    // sRGB's is converted, as browsers do.
    if (!push->reader->leaves_gamma) png_set_gamma(png, PNG_DEFAULT_sRGB, PNG_DEFAULT_sRGB);
    // Without interlace handling the push reader hands each pass's rows as they are
    // stored: the pass's own pixels, packed.
    if (push->pass_sink == NULL) png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)png_get_image_width(png, info) * (wide ? 8 : 4)) {
        imago_png *reader = (imago_png *)png_get_error_ptr(png);
        reader->message_is_own = 1;
        png_error(png, "unexpected row layout after conversion");
    }
}

static void imago_png_push_row(png_structp png, png_bytep row, png_uint_32 number, int pass) {
    imago_png_push *push = (imago_png_push *)png_get_progressive_ptr(png);
    if (imago_deadline_passed(push->reader->deadline)) {
        push->reader->timed_out = 1;
        push->reader->message_is_own = 1;
        png_error(png, "the decode took longer than allowed");
    }
    if (row == NULL) return;
    if (push->pass_sink != NULL) {
        static const int ystart[7] = {0, 0, 4, 0, 2, 0, 1}, yinc[7] = {8, 8, 8, 4, 4, 2, 2};
        static const int xstart[7] = {0, 4, 0, 2, 0, 1, 0}, xinc[7] = {8, 8, 4, 4, 2, 2, 1};
        if (pass < 0 || pass > 6) return;
        png_uint_32 y = number, first = 0, step = 1, count = push->width;
        if (push->interlaced) {
            y = ystart[pass] + number * yinc[pass];
            first = xstart[pass];
            step = xinc[pass];
            count = push->width > first ? (push->width - first + step - 1) / step : 0;
        }
        if (y >= push->height) return;
        push->pass_sink(push->context, row, y, first, step, count);
        push->rows_seen = 1;
        if (pass == push->last_pass && number + 1 == push->last_pass_rows) push->complete = 1;
        return;
    }
    if (number >= push->height) return;
    if (push->sink != NULL) {
        push->sink(push->context, row, number);
    } else {
        // For Adam7, libpng hands each pass's row for every image row it covers and
        // widens its pixels over their block, so the passes received show as a coarse
        // image that each later pass refines, as browsers draw them.
        png_progressive_combine_row(png, push->rows[number], row);
    }
    push->rows_seen = 1;
    if (number + 1 == push->height && (!push->interlaced || pass == 6)) push->complete = 1;
}

static void imago_png_push_end(png_structp png, png_infop info) {
    (void)info;
    imago_png_push *push = (imago_png_push *)png_get_progressive_ptr(png);
    push->complete = 1;
    push->ended = 1;
}

void imago_png_leave_gamma(imago_png *reader) {
    reader->leaves_gamma = 1;
}

void imago_png_keep_16(imago_png *reader) {
    reader->keeps_16 = 1;
}

void imago_png_set_deadline(imago_png *reader, uint64_t deadline) {
    reader->deadline = deadline;
}

int imago_png_timed_out(const imago_png *reader) {
    return reader->timed_out;
}

static int imago_png_run(imago_png *reader, imago_png_push *push, int *partial) {
    *partial = IMAGO_PNG_WHOLE;
    push->reader = reader;
    push->height = png_get_image_height(reader->png, reader->info);
    push->width = png_get_image_width(reader->png, reader->info);
    push->interlaced = png_get_interlace_type(reader->png, reader->info) != PNG_INTERLACE_NONE;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, imago_png_error, imago_png_warning);
    png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
    if (info == NULL) {
        if (png != NULL) png_destroy_read_struct(&png, NULL, NULL);
        snprintf(reader->message, sizeof reader->message, "out of memory for the reader");
        reader->message_is_own = 1;
        return -1;
    }
    int failed = 0;
    reader->message_is_own = 0;
    if (setjmp(png_jmpbuf(png))) {
        failed = 1;
    } else {
        imago_png_limit(png);
        png_set_progressive_read_fn(png, push, imago_png_push_info, imago_png_push_row, imago_png_push_end);
        png_process_data(png, info, (png_bytep)reader->data, reader->size);
    }
    png_destroy_read_struct(&png, &info, NULL);
    // The push reader never fails for want of data, only for damage (a CRC, a zlib
    // stream, a chunk out of order), and a damaged file fails as a whole, whatever
    // rows came before the damage. Data that ends early keeps the rows it gave.
    if (failed) return -1;
    if (push->complete) {
        if (!push->ended) *partial = IMAGO_PNG_ENDS_AFTER_ROWS;
        return 0;
    }
    if (!push->rows_seen) {
        snprintf(reader->message, sizeof reader->message, "the data ends before the image does");
        reader->message_is_own = 1;
        return -1;
    }
    *partial = IMAGO_PNG_PARTIAL;
    return 0;
}

int imago_png_read_pixels(imago_png *reader, uint8_t *pixels, size_t stride, int *partial) {
    png_uint_32 height = png_get_image_height(reader->png, reader->info);
    // Rows that never arrive stay transparent.
    memset(pixels, 0, stride * height);
    reader->rows = malloc(sizeof(png_bytep) * height);
    if (reader->rows == NULL) {
        snprintf(reader->message, sizeof reader->message, "out of memory for row pointers");
        reader->message_is_own = 1;
        return -1;
    }
    for (png_uint_32 y = 0; y < height; y++) reader->rows[y] = pixels + (size_t)y * stride;
    imago_png_push push = { .rows = reader->rows };
    return imago_png_run(reader, &push, partial);
}

int imago_png_read_passes(imago_png *reader, imago_png_pass_sink sink, void *context, int *partial) {
    static const int ystart[7] = {0, 0, 4, 0, 2, 0, 1}, yinc[7] = {8, 8, 8, 4, 4, 2, 2};
    static const int xstart[7] = {0, 4, 0, 2, 0, 1, 0};
    png_uint_32 width = png_get_image_width(reader->png, reader->info);
    png_uint_32 height = png_get_image_height(reader->png, reader->info);
    imago_png_push push = { .pass_sink = sink, .context = context, .last_pass = -1 };
    if (png_get_interlace_type(reader->png, reader->info) == PNG_INTERLACE_NONE) {
        push.last_pass = 0;
        push.last_pass_rows = height;
    } else {
        for (int pass = 6; pass >= 0; pass--) {
            if (width <= (png_uint_32)xstart[pass] || height <= (png_uint_32)ystart[pass]) continue;
            push.last_pass = pass;
            push.last_pass_rows = (height - ystart[pass] + yinc[pass] - 1) / yinc[pass];
            break;
        }
    }
    return imago_png_run(reader, &push, partial);
}

int imago_png_read_rows(imago_png *reader, imago_png_row_sink sink, void *context, int *partial) {
    if (png_get_interlace_type(reader->png, reader->info) != PNG_INTERLACE_NONE) {
        snprintf(reader->message, sizeof reader->message, "an interlaced image has no rows in order");
        reader->message_is_own = 1;
        return -1;
    }
    imago_png_push push = { .sink = sink, .context = context };
    return imago_png_run(reader, &push, partial);
}
#endif
