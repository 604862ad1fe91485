import Foundation

// Short descriptions for the values a load hands back. Without them `print(result)`
// and the debugger spell out every pixel: a 512×512 image printed as five million
// characters. `debugDescription` matters as much as `description`, since a `Result`,
// an `Optional` or an array prints its elements with it.

extension Bitmap: CustomStringConvertible, CustomDebugStringConvertible {
    /// "512×512 RGBA bitmap".
    public var description: String { "\(width)×\(height) RGBA bitmap" }

    /// "Bitmap(512×512, 2048 bytes a row)": the layout, never the pixels.
    public var debugDescription: String { "Bitmap(\(width)×\(height), \(bytesPerRow) bytes a row)" }
}

extension DecodedImage: CustomStringConvertible, CustomDebugStringConvertible {
    /// "jpeg 512×512, 1 frame"; "gif 90×90, 8 frames, partial" for an animation cut short.
    public var description: String {
        "\(format.rawValue) \(width)×\(height), \(frameCount) frame\(frameCount == 1 ? "" : "s")" + (isPartial ? ", partial" : "")
    }

    /// "DecodedImage(jpeg 512×512, 1 frame)".
    public var debugDescription: String { "DecodedImage(\(description))" }
}

extension DecodedImage.Frame: CustomStringConvertible, CustomDebugStringConvertible {
    /// "512×512 RGBA bitmap for 0.1 s".
    public var description: String { "\(bitmap) for \(duration.formatted()) s" }

    /// "Frame(512×512 RGBA bitmap for 0.1 s)".
    public var debugDescription: String { "Frame(\(description))" }
}

extension ImageResponse: CustomStringConvertible, CustomDebugStringConvertible {
    /// "jpeg 512×512, 1 frame, from network".
    public var description: String { "\(image), from \(source.rawValue)" }

    /// "ImageResponse(jpeg 512×512, 1 frame, from network, https://example.com/cat.jpg)".
    public var debugDescription: String { "ImageResponse(\(description), \(url.absoluteString.prefix(200)))" }
}
