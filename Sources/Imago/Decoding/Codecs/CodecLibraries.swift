#if os(Linux)
import CLibAVIF
import CLibHEIF
import Glibc

/// A shared library opened when first needed (`dlopen`), not when the process starts.
///
/// Debian's libheif and libavif bring every AV1 and HEVC codec with them (libaom,
/// rav1e, SVT-AV1, x265, libde265, dav1d; all bound at load time). Linked like the
/// other codecs, loading them and resolving their symbols took a third of every
/// process's start-up (13 ms of the 41 ms `imago --help` took), paid by every run,
/// though most never meet an AVIF or a HEIC. They are opened here instead, the first
/// time such an image is decoded, and a machine without them fails those formats
/// alone, with a typed error.
///
/// `@unchecked Sendable`: the handle is never closed and only read (`dlsym` is
/// thread-safe), so any thread may look a symbol up in it.
final class SharedLibrary: @unchecked Sendable {
    // The handle is never closed: the functions looked up in it live as long as the process.
    private let handle: UnsafeMutableRawPointer
    private let name: String

    /// Opens the first of `names` that loads: the development symlink first (it is
    /// the version the headers describe), then the sonames of the versions Imago
    /// builds against.
    init(_ names: [String], format: ImageFormat, package: String) throws(ImagoError) {
        var reasons: [String] = []
        for name in names {
            if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) {
                self.handle = handle
                self.name = name
                return
            }
            reasons.append(dlerror().map { String(cString: $0) } ?? name)
        }
        throw .decodingFailed(
            format: format, reason: "\(names[0]) could not be loaded (Debian package \(package))",
            codec: .init(library: names[0], message: reasons.joined(separator: "; ")))
    }

    /// The function `symbol`, as the C type `F` its header declares.
    func function<F>(_ symbol: String, format: ImageFormat) throws(ImagoError) -> F {
        guard let address = dlsym(handle, symbol) else {
            throw .decodingFailed(format: format, reason: "\(name) has no \(symbol): not the version Imago was built for", codec: nil)
        }
        return unsafeBitCast(address, to: F.self)
    }
}

/// The libheif functions the HEIF decoder calls, looked up once.
///
/// `@unchecked Sendable`: C function pointers, fixed once looked up, which libheif
/// lets any thread call (each decode has its own context).
struct LibHEIF: @unchecked Sendable {
    let initialize: @convention(c) (UnsafeMutablePointer<heif_init_params>?) -> heif_error
    let contextAlloc: @convention(c) () -> OpaquePointer?
    let contextFree: @convention(c) (OpaquePointer?) -> Void
    let contextSetMaxDecodingThreads: @convention(c) (OpaquePointer?, Int32) -> Void
    let contextSetMaximumImageSizeLimit: @convention(c) (OpaquePointer?, Int32) -> Void
    let contextReadFromReader: @convention(c) (
        OpaquePointer?, UnsafePointer<heif_reader>?, UnsafeMutableRawPointer?, OpaquePointer?
    ) -> heif_error
    let contextGetPrimaryImageHandle: @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?) -> heif_error
    let imageHandleRelease: @convention(c) (OpaquePointer?) -> Void
    let imageHandleGetWidth: @convention(c) (OpaquePointer?) -> Int32
    let imageHandleGetHeight: @convention(c) (OpaquePointer?) -> Int32
    let imageHandleHasAlphaChannel: @convention(c) (OpaquePointer?) -> Int32
    let imageHandleIsPremultipliedAlpha: @convention(c) (OpaquePointer?) -> Int32
    let decodingOptionsAlloc: @convention(c) () -> UnsafeMutablePointer<heif_decoding_options>?
    let decodingOptionsFree: @convention(c) (UnsafeMutablePointer<heif_decoding_options>?) -> Void
    let decodeImage: @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, heif_colorspace, heif_chroma, UnsafePointer<heif_decoding_options>?
    ) -> heif_error
    let imageRelease: @convention(c) (OpaquePointer?) -> Void
    let imageGetWidth: @convention(c) (OpaquePointer?, heif_channel) -> Int32
    let imageGetHeight: @convention(c) (OpaquePointer?, heif_channel) -> Int32
    let imageGetPlaneReadonly: @convention(c) (OpaquePointer?, heif_channel, UnsafeMutablePointer<Int32>?) -> UnsafePointer<UInt8>?
    // The colour description: an ICC profile, or CICP code points (nclx).
    let imageHandleGetColorProfileType: @convention(c) (OpaquePointer?) -> heif_color_profile_type
    let imageHandleGetRawColorProfileSize: @convention(c) (OpaquePointer?) -> Int
    let imageHandleGetRawColorProfile: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> heif_error
    let imageHandleGetNclxColorProfile: @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<heif_color_profile_nclx>?>?
    ) -> heif_error
    let nclxColorProfileFree: @convention(c) (UnsafeMutablePointer<heif_color_profile_nclx>?) -> Void
    let imageHandleGetLumaBitsPerPixel: @convention(c) (OpaquePointer?) -> Int32
    let imageGetBitsPerPixelRange: @convention(c) (OpaquePointer?, heif_channel) -> Int32

    /// libheif, opened and initialised (it loads its codec plugins) on first use.
    static let shared: Result<LibHEIF, ImagoError> = Result { () throws(ImagoError) in
        let library = try SharedLibrary(["libheif.so", "libheif.so.1"], format: .heic, package: "libheif1")
        func load<F>(_ symbol: String) throws(ImagoError) -> F { try library.function(symbol, format: .heic) }
        let heif = try LibHEIF(
            initialize: load("heif_init"),
            contextAlloc: load("heif_context_alloc"),
            contextFree: load("heif_context_free"),
            contextSetMaxDecodingThreads: load("heif_context_set_max_decoding_threads"),
            contextSetMaximumImageSizeLimit: load("heif_context_set_maximum_image_size_limit"),
            contextReadFromReader: load("heif_context_read_from_reader"),
            contextGetPrimaryImageHandle: load("heif_context_get_primary_image_handle"),
            imageHandleRelease: load("heif_image_handle_release"),
            imageHandleGetWidth: load("heif_image_handle_get_width"),
            imageHandleGetHeight: load("heif_image_handle_get_height"),
            imageHandleHasAlphaChannel: load("heif_image_handle_has_alpha_channel"),
            imageHandleIsPremultipliedAlpha: load("heif_image_handle_is_premultiplied_alpha"),
            decodingOptionsAlloc: load("heif_decoding_options_alloc"),
            decodingOptionsFree: load("heif_decoding_options_free"),
            decodeImage: load("heif_decode_image"),
            imageRelease: load("heif_image_release"),
            imageGetWidth: load("heif_image_get_width"),
            imageGetHeight: load("heif_image_get_height"),
            imageGetPlaneReadonly: load("heif_image_get_plane_readonly"),
            imageHandleGetColorProfileType: load("heif_image_handle_get_color_profile_type"),
            imageHandleGetRawColorProfileSize: load("heif_image_handle_get_raw_color_profile_size"),
            imageHandleGetRawColorProfile: load("heif_image_handle_get_raw_color_profile"),
            imageHandleGetNclxColorProfile: load("heif_image_handle_get_nclx_color_profile"),
            nclxColorProfileFree: load("heif_nclx_color_profile_free"),
            imageHandleGetLumaBitsPerPixel: load("heif_image_handle_get_luma_bits_per_pixel"),
            imageGetBitsPerPixelRange: load("heif_image_get_bits_per_pixel_range"))
        let started = heif.initialize(nil)
        guard started.code == heif_error_Ok else {
            throw .decodingFailed(
                format: .heic, reason: "libheif could not start",
                codec: .init(library: "libheif", message: started.message.map { String(cString: $0) } ?? "error \(started.code.rawValue)"))
        }
        return heif
    }
}

/// The libavif functions the AVIF decoder calls, looked up once.
///
/// `@unchecked Sendable`: C function pointers, fixed once looked up, which libavif
/// lets any thread call (each decode has its own decoder).
struct LibAVIF: @unchecked Sendable {
    let decoderCreate: @convention(c) () -> UnsafeMutablePointer<avifDecoder>?
    let decoderDestroy: @convention(c) (UnsafeMutablePointer<avifDecoder>?) -> Void
    let decoderSetIOMemory: @convention(c) (UnsafeMutablePointer<avifDecoder>?, UnsafePointer<UInt8>?, Int) -> avifResult
    let decoderParse: @convention(c) (UnsafeMutablePointer<avifDecoder>?) -> avifResult
    let decoderNthImageTiming: @convention(c) (UnsafePointer<avifDecoder>?, UInt32, UnsafeMutablePointer<avifImageTiming>?) -> avifResult
    let decoderNextImage: @convention(c) (UnsafeMutablePointer<avifDecoder>?) -> avifResult
    let resultToString: @convention(c) (avifResult) -> UnsafePointer<CChar>?
    let rgbImageSetDefaults: @convention(c) (UnsafeMutablePointer<avifRGBImage>?, UnsafePointer<avifImage>?) -> Void
    let imageYUVToRGB: @convention(c) (UnsafePointer<avifImage>?, UnsafeMutablePointer<avifRGBImage>?) -> avifResult
    let imageSetViewRect: @convention(c) (UnsafeMutablePointer<avifImage>?, UnsafePointer<avifImage>?, UnsafePointer<avifCropRect>?) -> avifResult
    /// The AV1 decoder libavif uses: dav1d when libavif was built with it (the
    /// fastest), else whichever it has.
    let codecChoice: avifCodecChoice

    /// libavif, opened on first use.
    static let shared: Result<LibAVIF, ImagoError> = Result { () throws(ImagoError) in
        let library = try SharedLibrary(["libavif.so", "libavif.so.15", "libavif.so.16"], format: .avif, package: "libavif15")
        func load<F>(_ symbol: String) throws(ImagoError) -> F { try library.function(symbol, format: .avif) }
        let codecName: @convention(c) (avifCodecChoice, avifCodecFlags) -> UnsafePointer<CChar>? = try load("avifCodecName")
        let dav1d = codecName(AVIF_CODEC_CHOICE_DAV1D, avifCodecFlags(AVIF_CODEC_FLAG_CAN_DECODE.rawValue)) != nil
        return try LibAVIF(
            decoderCreate: load("avifDecoderCreate"),
            decoderDestroy: load("avifDecoderDestroy"),
            decoderSetIOMemory: load("avifDecoderSetIOMemory"),
            decoderParse: load("avifDecoderParse"),
            decoderNthImageTiming: load("avifDecoderNthImageTiming"),
            decoderNextImage: load("avifDecoderNextImage"),
            resultToString: load("avifResultToString"),
            rgbImageSetDefaults: load("avifRGBImageSetDefaults"),
            imageYUVToRGB: load("avifImageYUVToRGB"),
            imageSetViewRect: load("avifImageSetViewRect"),
            codecChoice: dav1d ? AVIF_CODEC_CHOICE_DAV1D : AVIF_CODEC_CHOICE_AUTO)
    }
}
#endif
