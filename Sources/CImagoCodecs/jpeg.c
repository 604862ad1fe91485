#ifdef __linux__
#include "CImagoCodecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

struct imago_jpeg {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr errors;
    struct jpeg_progress_mgr progress;
    uint64_t deadline;
    int timed_out;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    // Set when `message` is this file's rather than libjpeg's.
    int message_is_own;
    int created;
    int started;
    // Set once the header is read: from then on, data that ends early is decoded as
    // far as it goes rather than refused.
    int allows_truncation;
    int truncated;
    // The ICC profile reassembled from the APP2 markers (malloc'd by libjpeg), or NULL.
    JOCTET *icc;
};

static void imago_jpeg_error_exit(j_common_ptr cinfo) {
    imago_jpeg *jpeg = (imago_jpeg *)cinfo->client_data;
    cinfo->err->format_message(cinfo, jpeg->message);
    longjmp(jpeg->jump, 1);
}

// Warnings are ignored, except the one libjpeg gives when the data ends early: in
// the header it is an error (there is no image to show), after it the image is kept
// as far as it goes, libjpeg filling the rest, and marked truncated.
static void imago_jpeg_emit_message(j_common_ptr cinfo, int level) {
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
        imago_jpeg *jpeg = (imago_jpeg *)cinfo->client_data;
        if (!jpeg->allows_truncation) imago_jpeg_error_exit(cinfo);
        jpeg->truncated = 1;
    }
}

static void imago_jpeg_output_message(j_common_ptr cinfo) {
    (void)cinfo;
}

// libjpeg calls its progress monitor before each piece of input it absorbs (a row
// of blocks of a scan, a marker) and each output row group, which is as often as a
// deadline needs checking and cheap next to the work between.
static void imago_jpeg_progress(j_common_ptr cinfo) {
    imago_jpeg *jpeg = (imago_jpeg *)cinfo->client_data;
    if (!imago_deadline_passed(jpeg->deadline)) return;
    snprintf(jpeg->message, sizeof jpeg->message, "the decode took longer than allowed");
    jpeg->message_is_own = 1;
    jpeg->timed_out = 1;
    longjmp(jpeg->jump, 1);
}

void imago_jpeg_set_deadline(imago_jpeg *jpeg, uint64_t deadline) {
    jpeg->deadline = deadline;
    jpeg->progress.progress_monitor = imago_jpeg_progress;
    jpeg->cinfo.progress = deadline != 0 ? &jpeg->progress : NULL;
}

int imago_jpeg_timed_out(const imago_jpeg *jpeg) {
    return jpeg->timed_out;
}

imago_jpeg *imago_jpeg_create(const uint8_t *data, size_t size) {
    imago_jpeg *jpeg = calloc(1, sizeof(imago_jpeg));
    if (jpeg == NULL) return NULL;
    jpeg->cinfo.err = jpeg_std_error(&jpeg->errors);
    jpeg->errors.error_exit = imago_jpeg_error_exit;
    jpeg->errors.emit_message = imago_jpeg_emit_message;
    jpeg->errors.output_message = imago_jpeg_output_message;
    jpeg->cinfo.client_data = jpeg;
    if (setjmp(jpeg->jump)) {
        imago_jpeg_destroy(jpeg);
        return NULL;
    }
    jpeg_create_decompress(&jpeg->cinfo);
    jpeg->created = 1;
    jpeg_mem_src(&jpeg->cinfo, data, (unsigned long)size);
    jpeg_save_markers(&jpeg->cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(&jpeg->cinfo, JPEG_APP0 + 2, 0xFFFF);
    return jpeg;
}

void imago_jpeg_destroy(imago_jpeg *jpeg) {
    if (jpeg == NULL) return;
    if (jpeg->created) jpeg_destroy_decompress(&jpeg->cinfo);
    free(jpeg->icc);
    free(jpeg);
}

const char *imago_jpeg_message(const imago_jpeg *jpeg) {
    return jpeg->message;
}

int imago_jpeg_message_is_own(const imago_jpeg *jpeg) {
    return jpeg->message_is_own;
}

static imago_jpeg_space imago_jpeg_map_space(J_COLOR_SPACE space) {
    switch (space) {
    case JCS_GRAYSCALE: return IMAGO_JPEG_GRAY;
    case JCS_RGB: return IMAGO_JPEG_RGB;
    case JCS_YCbCr: return IMAGO_JPEG_YCBCR;
    case JCS_CMYK: return IMAGO_JPEG_CMYK;
    case JCS_YCCK: return IMAGO_JPEG_YCCK;
    default: return IMAGO_JPEG_OTHER;
    }
}

int imago_jpeg_read_header(imago_jpeg *jpeg, imago_jpeg_info *info) {
    if (setjmp(jpeg->jump)) return -1;
    if (jpeg_read_header(&jpeg->cinfo, TRUE) != JPEG_HEADER_OK) {
        snprintf(jpeg->message, sizeof jpeg->message, "no image in the data");
        jpeg->message_is_own = 1;
        return -1;
    }
    struct jpeg_decompress_struct *c = &jpeg->cinfo;
    memset(info, 0, sizeof *info);
    info->width = c->image_width;
    info->height = c->image_height;
    info->components = c->num_components;
    info->color_space = imago_jpeg_map_space(c->jpeg_color_space);
    info->precision = c->data_precision;
    info->progressive = c->progressive_mode;
    info->arithmetic = c->arith_code;
    info->adobe = c->saw_Adobe_marker;
    for (jpeg_saved_marker_ptr m = c->marker_list; m != NULL; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length > 6 &&
            memcmp(m->data, "Exif\0\0", 6) == 0) {
            info->exif = m->data + 6;
            info->exif_length = m->data_length - 6;
            break;
        }
    }
    // Its chunks, in sequence order across APP2 markers; a profile whose chunks are
    // missing or numbered wrongly is left out (libjpeg only warns).
    unsigned int icc_length = 0;
    if (jpeg->icc == NULL && jpeg_read_icc_profile(c, &jpeg->icc, &icc_length) && jpeg->icc != NULL) {
        info->icc = jpeg->icc;
        info->icc_length = icc_length;
    }
    return 0;
}

size_t imago_jpeg_coefficient_bytes(const imago_jpeg *jpeg) {
    const struct jpeg_decompress_struct *c = &jpeg->cinfo;
    size_t bytes = 0;
    // As jdcoefct.c sizes its whole-image arrays: each component's blocks, rounded up
    // to whole iMCU rows and columns, 64 coefficients of 2 bytes each.
    for (int ci = 0; ci < c->num_components; ci++) {
        const jpeg_component_info *component = &c->comp_info[ci];
        size_t columns = component->width_in_blocks, rows = component->height_in_blocks;
        size_t h = (size_t)component->h_samp_factor, v = (size_t)component->v_samp_factor;
        if (h > 0) columns = (columns + h - 1) / h * h;
        if (v > 0) rows = (rows + v - 1) / v * v;
        bytes += columns * rows * sizeof(JBLOCK);
    }
    return bytes;
}

int imago_jpeg_start(imago_jpeg *jpeg, int scale_denom, uint32_t *width, uint32_t *height) {
    if (setjmp(jpeg->jump)) return -1;
    struct jpeg_decompress_struct *c = &jpeg->cinfo;
    switch (c->jpeg_color_space) {
    case JCS_CMYK:
    case JCS_YCCK:
        c->out_color_space = JCS_CMYK;
        break;
    default:
        c->out_color_space = JCS_EXT_RGBA;
        break;
    }
    c->scale_num = 1;
    c->scale_denom = (unsigned int)scale_denom;
    c->dct_method = JDCT_ISLOW;
    // A progressive file's scans are all read here, so a cut is met here.
    jpeg->allows_truncation = 1;
    jpeg_start_decompress(c);
    jpeg->started = 1;
    *width = c->output_width;
    *height = c->output_height;
    return 0;
}

int imago_jpeg_truncated(const imago_jpeg *jpeg) {
    return jpeg->truncated;
}

int imago_jpeg_read_pixels(imago_jpeg *jpeg, uint8_t *pixels, size_t stride, uint32_t first_row, uint32_t end_row) {
    if (setjmp(jpeg->jump)) return -1;
    struct jpeg_decompress_struct *c = &jpeg->cinfo;
    JDIMENSION end = end_row < c->output_height ? end_row : c->output_height;
    while (c->output_scanline < end) {
        JSAMPROW rows[4];
        JDIMENSION count = 0;
        for (; count < 4 && c->output_scanline + count < end; count++) {
            rows[count] = pixels + (size_t)(c->output_scanline + count - first_row) * stride;
        }
        if (jpeg_read_scanlines(c, rows, count) == 0) {
            snprintf(jpeg->message, sizeof jpeg->message, "no scanlines could be read");
            jpeg->message_is_own = 1;
            return -1;
        }
    }
    // jpeg_finish_decompress is left out: it would only read on to the EOI marker,
    // and the pixels are complete. imago_jpeg_destroy releases everything.
    return 0;
}
#endif
