#include <lcms2.h>

// lcms2's pixel formats are function-like macros, which Swift does not import.
static const cmsUInt32Number imago_lcms_rgba8 = TYPE_RGBA_8;
static const cmsUInt32Number imago_lcms_rgba8_premultiplied = TYPE_RGBA_8_PREMUL;
static const cmsUInt32Number imago_lcms_rgba16 = TYPE_RGBA_16;
static const cmsUInt32Number imago_lcms_cmyk8 = TYPE_CMYK_8;
static const cmsUInt32Number imago_lcms_cmyk8_inverted = TYPE_CMYK_8_REV;
static const cmsUInt32Number imago_lcms_gray8 = TYPE_GRAY_8;
static const cmsUInt32Number imago_lcms_rgb8 = TYPE_RGB_8;
static const cmsUInt32Number imago_lcms_rgb_float = TYPE_RGB_FLT;
