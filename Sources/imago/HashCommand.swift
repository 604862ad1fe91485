import Foundation
import Imago
import ImagoCommandLine

/// `imago hash FILE|URL [--blurhash]`: the placeholder hashes of an image, for a
/// server to send along with its URL.
let hashCommand = Command(
    name: "hash",
    synopsis: "FILE|URL [--blurhash] [--components XxY] [--header 'NAME: VALUE']...",
    summary: """
        Print an image's ThumbHash in base64 (and with --blurhash its BlurHash on a \
        second line): the placeholders a view can show while the image loads. A FILE \
        is read from disk; a URL (http, https, file, data) is loaded. The image is \
        decoded straight to 100 px, all either hash keeps.
        """,
    options: [
        .flag("--blurhash", "print the BlurHash too, on a second line"),
        .value("--components", "XxY", "the BlurHash's components across and down, 1 to 9 each (default 4x3)"),
        .value("--header", "'NAME: VALUE'", "send this header field with the request for a URL, as fetch does; repeat it for more fields"),
    ],
    run: runHash)

private func runHash(_ arguments: Arguments) async -> Int32 {
    var components = (x: 4, y: 3)
    var headers: [String: String] = [:]
    do throws(UsageError) {
        headers = try LoaderOptions.headerFields(arguments)
        guard arguments.positionals.count == 1 else { throw UsageError(message: "hash takes one FILE or URL") }
        if let text = arguments.string("--components") {
            let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, (1...9).contains(parts[0]), (1...9).contains(parts[1]) else {
                throw UsageError(message: "--components takes XxY, each 1 to 9 (like 4x3), not '\(text)'")
            }
            components = (parts[0], parts[1])
        }
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let input = arguments.positionals[0]
    let options = DecodingOptions(targetSize: .thumbnail(100))
    let bitmap: Bitmap
    do {
        if !isFilePath(input) {
            guard let url = URL(string: input) else { throw ImagoError.invalidURL(input) }
            // A loader of its own: nothing kept in memory or on disk for one image.
            var configuration = ImageLoader.Configuration()
            configuration.headers = headers
            let loader = ImageLoader(configuration: configuration, cache: nil)
            bitmap = try await loader.image(for: ImageRequest(url: url, targetSize: .thumbnail(100))).image.bitmap
        } else {
            let data = try LocalDataLoader.contentsOfFile(atPath: input)
            bitmap = try ImageDecoders.Registry.shared.decode(data, options: options).bitmap
        }
    } catch {
        Output.error(failureLine(url: input, line: nil, error: (error as? ImagoError)?.description ?? "\(error)"))
        return ExitStatus.someFailed
    }
    Output.line(ThumbHash.encodeBase64(bitmap))
    if arguments.flag("--blurhash") { Output.line(BlurHash.encode(bitmap, components: components)) }
    return ExitStatus.success
}
