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

imago_png *imago_png_create(const uint8_t *data, size_t size) {
    imago_png *reader = calloc(1, sizeof(imago_png));
    if (reader == NULL) return NULL;
    reader->data = data;
    reader->size = size;
    reader->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, imago_png_error, imago_png_warning);
    if (reader->png != NULL) reader->info = png_create_info_struct(reader->png);
    if (reader->info == NULL) {
        imago_png_destroy(reader);
        return NULL;
    }
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
    return 0;
}

int imago_png_read_pixels(imago_png *reader, uint8_t *pixels, size_t stride) {
    png_structp png = reader->png;
    png_infop pinfo = reader->info;
    if (setjmp(png_jmpbuf(png))) return -1;
    int color_type = png_get_color_type(png, pinfo);
    png_set_expand(png);
    png_set_scale_16(png);
    if ((color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
    if ((color_type & PNG_COLOR_MASK_ALPHA) == 0 && png_get_valid(png, pinfo, PNG_INFO_tRNS) == 0) {
        png_set_filler(png, 0xFF, PNG_FILLER_AFTER);
    }
    // Files without gAMA (or with sRGB) are left as they are; a gAMA other than
    // sRGB's is converted, as browsers do.
    png_set_gamma(png, PNG_DEFAULT_sRGB, PNG_DEFAULT_sRGB);
    png_set_interlace_handling(png);
    png_read_update_info(png, pinfo);
    if (png_get_rowbytes(png, pinfo) != (size_t)png_get_image_width(png, pinfo) * 4) {
        reader->message_is_own = 1;
        png_error(png, "unexpected row layout after conversion");
    }
    png_uint_32 height = png_get_image_height(png, pinfo);
    reader->rows = malloc(sizeof(png_bytep) * height);
    if (reader->rows == NULL) {
        reader->message_is_own = 1;
        png_error(png, "out of memory for row pointers");
    }
    for (png_uint_32 y = 0; y < height; y++) reader->rows[y] = pixels + (size_t)y * stride;
    png_read_image(png, reader->rows);
    png_read_end(png, NULL);
    return 0;
}
#endif
