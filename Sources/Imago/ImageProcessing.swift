import Foundation

/// A step that turns one bitmap into another: resizing, cropping, rounding corners,
/// or anything an app defines.
///
/// The `identifier` names the output exactly: two processors with the same
/// identifier must produce the same pixels from the same input, because processed
/// images are cached under a key that includes it. Put every parameter in it.
public protocol ImageProcessing: Sendable {
    /// A stable name for this processor and its parameters, e.g. `imago.resize(fit-256x256)`.
    var identifier: String { get }
    /// Returns the processed bitmap. Its values are taken to be in the input's colour
    /// space (`Bitmap.colorSpace`): a processor works on the values as they are.
    func process(_ bitmap: Bitmap) -> Bitmap
}

extension ImageProcessing {
    /// The processed bitmap, in the input's colour space whatever the processor tagged
    /// it (a new bitmap is sRGB unless said otherwise).
    func applied(to bitmap: Bitmap) -> Bitmap {
        process(bitmap).tagged(bitmap.colorSpace)
    }
}
