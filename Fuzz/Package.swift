// swift-tools-version:6.0
import PackageDescription

/// libFuzzer targets, one per decoder, and for the parsers of what servers and disks
/// hand over (HTTP cache headers, disk-cache records). A package of their own because
/// a fuzz target has no `main` (libFuzzer brings it), so it links only with
/// `--sanitize=fuzzer`; `make fuzz` builds and runs them.
let formats = ["JPEG", "PNG", "GIF", "WebP", "BMP", "ICO", "TIFF", "AVIF", "HEIF", "JXL", "SVG", "HTTPHeaders", "DiskRecord"]

let package = Package(
    name: "ImagoFuzz",
    dependencies: [.package(name: "Imago", path: "..")],
    targets: formats.map { format in
        .executableTarget(
            name: "Fuzz\(format)",
            dependencies: [.product(name: "Imago", package: "Imago")],
            path: "Sources/Fuzz\(format)",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])])
    },
    swiftLanguageModes: [.v6]
)
