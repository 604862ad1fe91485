#ifndef CIMAGOCODECS_H
#define CIMAGOCODECS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __linux__

/// Non-zero once `deadline`, in nanoseconds on CLOCK_MONOTONIC, has come; 0 means
/// no deadline. The codecs below check it as they work, so a decode made to be slow
/// stops in the middle.
int imago_deadline_passed(uint64_t deadline);

/// A libjpeg decompressor whose errors come back as return codes.
///
/// libjpeg reports fatal errors through a callback that must not return; the default
/// one calls exit(). Each function below sets a jump point, so an error in libjpeg
/// unwinds to it and becomes -1 with a message, instead of ending the process.
typedef struct imago_jpeg imago_jpeg;

/// Colour spaces of the compressed data, as the decoder needs to tell them apart.
typedef enum {
    IMAGO_JPEG_GRAY = 1,
    IMAGO_JPEG_RGB = 2,
    IMAGO_JPEG_YCBCR = 3,
    IMAGO_JPEG_CMYK = 4,
    IMAGO_JPEG_YCCK = 5,
    IMAGO_JPEG_OTHER = 6,
} imago_jpeg_space;

typedef struct {
    uint32_t width;
    uint32_t height;
    int32_t components;
    imago_jpeg_space color_space;
    int32_t precision;
    int32_t progressive;
    int32_t arithmetic;
    /// The Adobe APP14 marker stores CMYK inverted.
    int32_t adobe;
    /// The payload of the first APP1 "Exif" marker (after the 6-byte "Exif\0\0"), or NULL.
    const uint8_t *exif;
    size_t exif_length;
    /// The ICC profile of the APP2 "ICC_PROFILE" markers, its chunks joined, or NULL.
    /// Valid until the decompressor is destroyed.
    const uint8_t *icc;
    size_t icc_length;
} imago_jpeg_info;

/// Returns NULL only when memory for the decompressor cannot be had. `data` must
/// outlive the decompressor.
imago_jpeg *imago_jpeg_create(const uint8_t *data, size_t size);
void imago_jpeg_destroy(imago_jpeg *jpeg);
/// The last error's message; valid until the next call on `jpeg`.
const char *imago_jpeg_message(const imago_jpeg *jpeg);
/// Non-zero when that message is this wrapper's own (the data holds no image, no
/// scanline could be read) rather than libjpeg's.
int imago_jpeg_message_is_own(const imago_jpeg *jpeg);

/// Stops the decode with an error once `deadline` (as for `imago_deadline_passed`)
/// has come: libjpeg's progress monitor checks it between rows of every scan and of
/// the output. `imago_jpeg_timed_out` then says so.
void imago_jpeg_set_deadline(imago_jpeg *jpeg, uint64_t deadline);
/// Non-zero when the last error was the deadline.
int imago_jpeg_timed_out(const imago_jpeg *jpeg);

/// Reads the markers up to the first scan: size, colour space and EXIF, no pixels.
int imago_jpeg_read_header(imago_jpeg *jpeg, imago_jpeg_info *info);

/// The bytes of DCT coefficients libjpeg keeps for the whole image when it must
/// buffer them (a progressive file, or a sequential one in several scans): 128 a
/// block of every component, whatever the scale of the output. Valid after the
/// header is read.
size_t imago_jpeg_coefficient_bytes(const imago_jpeg *jpeg);

/// Starts decompression scaled by 1/`scale_denom` (1, 2, 4 or 8), producing RGBA, or
/// raw CMYK for CMYK and YCCK data (4 bytes a pixel either way). Reports the output
/// size, which can be rounded up from the exact fraction.
int imago_jpeg_start(imago_jpeg *jpeg, int scale_denom, uint32_t *width, uint32_t *height);

/// Decodes the scanlines from where the last call stopped up to `end_row` (exclusive;
/// past the height means to the end) into `pixels`, row y at
/// `pixels + (y - first_row) * stride`: a caller converting the pixels does so a band
/// at a time, while they are in the cache, and a caller resampling them needs no more
/// than a band's buffer (`first_row` the band's first). Data that ends early is decoded as far as it goes, the rest of the image
/// left as libjpeg fills it (grey for a baseline file, the scans received for a
/// progressive one), and `imago_jpeg_truncated` says so afterwards.
int imago_jpeg_read_pixels(imago_jpeg *jpeg, uint8_t *pixels, size_t stride, uint32_t first_row, uint32_t end_row);

/// Non-zero when the data ended before the image did (libjpeg's premature-end
/// warning was given while decoding).
int imago_jpeg_truncated(const imago_jpeg *jpeg);

/// A libpng reader whose errors come back as return codes; libpng reports errors by
/// longjmp, so, as for JPEG, each function below is a place to land.
typedef struct imago_png imago_png;

typedef struct {
    uint32_t width;
    uint32_t height;
    int32_t bit_depth;
    int32_t color_type;
    int32_t interlaced;
    /// An alpha channel or a tRNS chunk.
    int32_t has_alpha;
    /// The eXIf chunk's payload (a TIFF header and IFDs), or NULL.
    const uint8_t *exif;
    size_t exif_length;
    /// The iCCP chunk's profile, decompressed, or NULL; valid until the reader is destroyed.
    const uint8_t *icc;
    size_t icc_length;
    /// An sRGB chunk.
    int32_t srgb;
    /// The gAMA chunk's file gamma (0.45455 for 1/2.2), or 0 without one.
    double gamma;
    /// A cHRM chunk, and its white, red, green and blue points as x, y pairs.
    int32_t has_chromaticities;
    double chromaticities[8];
} imago_png_info;

/// Returns NULL only when memory for the reader cannot be had. `data` must outlive it.
imago_png *imago_png_create(const uint8_t *data, size_t size);
void imago_png_destroy(imago_png *png);
/// The last error's message; valid until the next call on `png`.
const char *imago_png_message(const imago_png *png);
/// Non-zero when that message is this wrapper's own (the data ended, a buffer could
/// not be had) rather than libpng's.
int imago_png_message_is_own(const imago_png *png);

/// Reads the chunks before the image data: size, colour type, eXIf; no pixels.
int imago_png_read_header(imago_png *png, imago_png_info *info);

/// How much of the image `imago_png_read_pixels` found.
enum {
    /// Every row, and the file's end (IEND).
    IMAGO_PNG_WHOLE = 0,
    /// Every row, but the data ends before IEND.
    IMAGO_PNG_ENDS_AFTER_ROWS = 1,
    /// Some rows only: the data ends inside the image.
    IMAGO_PNG_PARTIAL = 2,
};

/// Leaves the gAMA chunk to the caller, who converts the colours itself (with the
/// file's profile, cICP or chromaticities): the pixels come as stored. Call before
/// reading pixels.
void imago_png_leave_gamma(imago_png *png);

/// Keeps a 16-bit image's samples as stored (big-endian RGBA, 8 bytes a pixel, alpha
/// 0xFFFF where the file has none) instead of scaling them to 8 bits; images of fewer
/// bits are unchanged. For `imago_png_read_pixels` only, with a stride of at least
/// width × 8. Call before reading pixels.
void imago_png_keep_16(imago_png *png);

/// Decodes the image as 8-bit RGBA with straight alpha into `pixels`, `stride` bytes
/// a row: palettes and gray expanded, tRNS made alpha, 16 bits scaled to 8 with
/// rounding, Adam7 reassembled, gAMA applied (unless left to the caller). Damage anywhere (a CRC, the zlib
/// stream) is an error. Data that ends early keeps the rows it holds, the others
/// transparent (for Adam7, the passes received, each pixel widened over its block);
/// `*partial` says how much there was. Data that ends before the first row is an error.
int imago_png_read_pixels(imago_png *png, uint8_t *pixels, size_t stride, int *partial);

/// Receives one decoded row: `width` pixels of 8-bit RGBA with straight alpha,
/// converted as `imago_png_read_pixels` converts them, valid only during the call.
typedef void (*imago_png_row_sink)(void *context, const uint8_t *row, uint32_t number);

/// Decodes a non-interlaced image a row at a time, top to bottom, handing each to
/// `sink` instead of keeping it: memory for one row, whatever the height. Rows the
/// data does not hold are never handed; `*partial` as for `imago_png_read_pixels`.
/// An interlaced image is refused (its rows come in seven passes).
int imago_png_read_rows(imago_png *png, imago_png_row_sink sink, void *context, int *partial);

/// Receives the pixels of one row of one pass: `count` pixels of 8-bit RGBA with
/// straight alpha, converted as `imago_png_read_pixels` converts them, packed; pixel
/// k is column `first + k * step` of image row `y`. Valid only during the call.
typedef void (*imago_png_pass_sink)(void *context, const uint8_t *pixels, uint32_t y, uint32_t first,
                                    uint32_t step, uint32_t count);

/// Decodes an image pass by pass (Adam7's seven, or the one pass of a non-interlaced
/// image), handing each pass's rows to `sink` as they are decoded instead of
/// reassembling the image: memory for one row, whatever the size. Every pixel is
/// handed exactly once; pixels the data does not hold are never handed. `*partial`
/// as for `imago_png_read_pixels`.
int imago_png_read_passes(imago_png *png, imago_png_pass_sink sink, void *context, int *partial);

/// Stops the decode with an error once `deadline` (as for `imago_deadline_passed`)
/// has come, checked at every row; `imago_png_timed_out` then says so.
void imago_png_set_deadline(imago_png *png, uint64_t deadline);
/// Non-zero when the last error was the deadline.
int imago_png_timed_out(const imago_png *png);

/// JPEG compression. How to compress; the policy (which subsampling for which quality) is the Swift
/// caller's, so this stays a plain pass-through to libjpeg.
typedef struct {
    /// 1…100, as jpeg_set_quality takes it.
    int32_t quality;
    /// Non-zero for 4:2:0 chroma subsampling, zero for 4:4:4.
    int32_t subsample_chroma;
    /// Non-zero for a progressive file (libjpeg's standard scan script).
    int32_t progressive;
} imago_jpeg_encode_options;

/// The outcome of one compression. On success `data` holds `size` bytes allocated with
/// malloc, which the caller owns and releases with free(); on failure `data` is NULL and
/// `message` says why: libjpeg's message, or this wrapper's own when `message_is_own`
/// is non-zero.
typedef struct {
    uint8_t *data;
    size_t size;
    char message[200];
    int32_t message_is_own;
} imago_jpeg_encoded;

/// Compresses `width` × `height` pixels of four bytes each (R, G, B, and one byte that
/// is ignored), rows `stride` bytes apart, into a baseline or progressive JFIF file.
///
/// libjpeg reports errors by longjmp; this lands them and returns -1 with a message,
/// having freed everything it allocated. Returns 0 on success.
int imago_jpeg_encode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                      const imago_jpeg_encode_options *options, imago_jpeg_encoded *result);

#endif
#endif
