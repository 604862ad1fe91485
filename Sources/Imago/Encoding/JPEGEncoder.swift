#if os(Linux) || canImport(ImageIO)
#if os(Linux)
import CImagoCodecs
#endif
import Foundation

extension ImageEncoders {
    /// Writes JPEG: through libjpeg-turbo on Linux (JFIF, YCbCr, optimised Huffman
    /// tables), through ImageIO on Apple platforms, with the same settings on both.
    ///
    /// JPEG has no alpha channel, so a bitmap with transparency is composited over
    /// `background` first, as a browser showing it on that colour would: each
    /// premultiplied pixel becomes `c + (255 - a) × background / 255`.
    public struct JPEG: ImageEncoding {
        /// An opaque sRGB colour: what shows through where the bitmap is transparent.
        public struct Color: Sendable, Hashable {
            /// Red, 0…255.
            package var red: UInt8
            /// Green, 0…255.
            package var green: UInt8
            /// Blue, 0…255.
            package var blue: UInt8

            /// Makes a colour from its sRGB components.
            public init(red: UInt8, green: UInt8, blue: UInt8) {
                self.red = red
                self.green = green
                self.blue = blue
            }

            /// White: the usual page behind an image, so the default background.
            public static let white = Color(red: 255, green: 255, blue: 255)
            /// Black.
            package static let black = Color(red: 0, green: 0, blue: 0)
        }

        /// The quality used when none is given: 85, where artefacts are hard to see in a
        /// photo and the file is still a fraction of the size at 95 or 100.
        public static let defaultQuality = 85

        /// libjpeg's quality scale, 1…100. Values outside it are clamped, at
        /// initialisation and on assignment, rather than trapping: a quality often comes
        /// from a user or a config file, and the nearest valid setting is the obvious
        /// meaning of 0 or 120.
        package var quality: Int {
            didSet { quality = Self.clamp(quality) }
        }
        /// The colour transparent pixels are flattened onto; white by default.
        package var background: Color
        /// Writes a progressive file: it shows coarse-to-fine while loading and is often a
        /// little smaller, but costs more memory and time to encode and to decode. Off by
        /// default, because baseline is what every decoder handles fastest.
        package var progressive: Bool

        /// Always `.jpeg`.
        public var format: ImageFormat { .jpeg }

        /// Makes an encoder; `quality` is clamped to 1…100.
        public init(quality: Int = ImageEncoders.JPEG.defaultQuality, background: Color = .white, progressive: Bool = false) {
            self.quality = Self.clamp(quality)
            self.background = background
            self.progressive = progressive
        }

        private static func clamp(_ quality: Int) -> Int {
            min(max(quality, 1), 100)
        }

        /// Whether chroma is stored at half resolution both ways (4:2:0) rather than full
        /// (4:4:4).
        ///
        /// Below 90, 4:2:0: the eye resolves colour far more coarsely than brightness, so
        /// halving chroma saves about a third of the file at no visible cost. From 90 up the
        /// caller is paying for fidelity, and subsampling then becomes the largest error
        /// left (colour bleeding at sharp red or blue edges, and in text), which no
        /// quantisation setting can win back; GIMP and Photoshop switch at about the same
        /// point.
        var subsamplesChroma: Bool { quality < 90 }

        /// Encodes `bitmap`; opaque bitmaps go to libjpeg as they are, without a copy.
        public func encode(_ bitmap: Bitmap) throws(ImagoError) -> Data {
            #if os(Linux)
            try encodeWithLibJPEG(bitmap)
            #else
            // ImageIO chooses chroma subsampling itself: `subsamplesChroma` has no
            // public setting there. The fourth byte is skipped, as libjpeg skips it.
            try ImageIOEncoding.encode(
                bitmap.hasAlpha ? Bitmap(width: bitmap.width, height: bitmap.height, pixels: flatten(bitmap)) : bitmap,
                as: .jpeg, ignoringAlpha: true, quality: Double(quality) / 100, progressive: progressive)
            #endif
        }

        #if os(Linux)
        private func encodeWithLibJPEG(_ bitmap: Bitmap) throws(ImagoError) -> Data {
            let flattened = bitmap.hasAlpha ? flatten(bitmap) : nil
            let stride = flattened == nil ? bitmap.bytesPerRow : bitmap.width * 4
            var options = imago_jpeg_encode_options(
                quality: Int32(quality), subsample_chroma: subsamplesChroma ? 1 : 0, progressive: progressive ? 1 : 0)
            var result = imago_jpeg_encoded()
            // Clamping, not trapping, for sizes past UInt32: libjpeg refuses anything over
            // 65500 pixels a side with its own message, before it reads a pixel.
            let width = UInt32(clamping: bitmap.width), height = UInt32(clamping: bitmap.height)
            // The fourth byte of each pixel is skipped (JCS_EXT_RGBX), so premultiplied
            // opaque pixels are already what JPEG stores.
            let status = (flattened ?? bitmap.pixels).withUnsafeBufferPointer { pixels in
                imago_jpeg_encode(pixels.baseAddress, width, height, stride, &options, &result)
            }
            guard status == 0, let data = result.data else {
                var text = result.message
                let message = withUnsafeBytes(of: &text) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                // libjpeg's messages say what it refused ("Maximum supported image
                // dimension is 65500 pixels"), so they are the reason as they stand.
                guard result.message_is_own == 0, !message.isEmpty else {
                    throw .encodingFailed(format: .jpeg, reason: message.isEmpty ? "libjpeg-turbo failed without a message" : message, codec: nil)
                }
                throw .encodingFailed(format: .jpeg, reason: message, codec: .init(library: "libjpeg-turbo", message: message))
            }
            // The buffer came from malloc in the C shim; Data takes it over rather than
            // copying a file that can be megabytes.
            return Data(bytesNoCopy: data, count: result.size, deallocator: .free)
        }
        #endif

        /// The pixels composited over `background`, tightly packed with the alpha byte
        /// left as it was (libjpeg ignores it).
        private func flatten(_ bitmap: Bitmap) -> [UInt8] {
            let width = bitmap.width, height = bitmap.height
            let background = [UInt32(self.background.red), UInt32(self.background.green), UInt32(self.background.blue)]
            return [UInt8](unsafeUninitializedCapacity: width * height * 4) { out, initialized in
                bitmap.pixels.withUnsafeBufferPointer { source in
                    var d = 0
                    for y in 0..<height {
                        var s = y * bitmap.bytesPerRow
                        for _ in 0..<width {
                            let a = UInt32(source[s + 3])
                            for c in 0..<3 {
                                // (255 - a) × bg / 255, rounded, without a division. A
                                // premultiplied value is at most a, so the sum stays ≤ 255;
                                // `min` only keeps a malformed bitmap from trapping.
                                let t = (255 - a) * background[c] + 128
                                out[d + c] = UInt8(min(255, UInt32(source[s + c]) + (t + (t >> 8)) >> 8))
                            }
                            out[d + 3] = UInt8(a)
                            s += 4
                            d += 4
                        }
                    }
                }
                initialized = width * height * 4
            }
        }
    }
}
#endif
