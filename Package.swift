// swift-tools-version:6.0
import PackageDescription

/// The Debian codecs are reached through system-library targets on Linux only; Apple
/// platforms decode with ImageIO, so the C modules are never built there.
let linux = TargetDependencyCondition.when(platforms: [Platform.linux])

let package = Package(
    name: "Imago",
    // The oldest systems a shipping app still supports. Imago guards what is newer (the
    // AVIS dictionary of ImageIO, SwiftUI's onChange(of:initial:)) with `#available`, and
    // locks with its own `Locked` rather than Synchronization (macOS 15, iOS 18).
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .library(name: "Imago", targets: ["Imago"]),
        // Views and targets: what binds images into UIKit, AppKit and SwiftUI views
        // (and any object), apart from the loading and caching core, which a server or
        // a command-line tool uses without them.
        .library(name: "ImagoUI", targets: ["ImagoUI"]),
        .executable(name: "imago", targets: ["imago"]),
        // The command-line plumbing `imago` and the benchmark program (Benchmarks/, a
        // package of its own) share: options, output, exit statuses. Not for applications.
        .library(name: "_ImagoCommandLine", targets: ["ImagoCommandLine"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibJPEG", pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(
            name: "CLibPNG", pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]),
        .systemLibrary(
            name: "CLibWebP", pkgConfig: "libwebpdemux",
            providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(
            name: "CGIFLib",
            providers: [.apt(["libgif-dev"])]),
        // libcurl's multi interface for the curl data loader, the network loader on
        // Linux; its variadic setters are wrapped by typed inline functions in the
        // module's header, so there is no C source.
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CLibTIFF", pkgConfig: "libtiff-4",
            providers: [.apt(["libtiff-dev"])]),
        // No pkgConfig: libavif.pc's only flag is -DAVIF_DLL, which SwiftPM refuses
        // with a warning on every build; the header is in /usr/include anyway.
        // libavif and libheif: headers only. Both are opened at first use
        // (CodecLibraries.swift), since linking them made every process load and
        // bind every AV1 and HEVC codec Debian has at start-up.
        .systemLibrary(
            name: "CLibAVIF",
            providers: [.apt(["libavif-dev"])]),
        .systemLibrary(
            name: "CLibHEIF",
            providers: [.apt(["libheif-dev"])]),
        // libjxl: headers only, opened at first use like libavif (it brings Highway,
        // Brotli and Little CMS). librsvg needs no target: its few functions are
        // declared in Swift (SVGDecoder.swift), its headers needing GLib's paths.
        .systemLibrary(
            name: "CLibJXL",
            providers: [.apt(["libjxl-dev"])]),
        // hiredis (0.14 on Debian 12) for the shared cache tier on Redis and Redis
        // Cluster. No pkgConfig: hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM
        // refuses with a warning on every build, and the header is in /usr/include.
        // Little CMS for colour management: small (one library, no dependencies), so
        // linked rather than opened at first use.
        .systemLibrary(
            name: "CLCMS2", pkgConfig: "lcms2",
            providers: [.apt(["liblcms2-dev"])]),
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]),
        // glibc's eventfd, gettid and pthread_setname_np, which it declares only under
        // _GNU_SOURCE, for the memory-pressure watcher: a header, no library.
        .systemLibrary(name: "CImagoSystem"),
        // The only C sources: libjpeg and libpng report errors by longjmp (libjpeg's
        // default even calls exit()), which Swift cannot catch, so their calls are
        // wrapped where setjmp can stand: JPEG and PNG decoding, JPEG encoding.
        .target(
            name: "CImagoCodecs",
            dependencies: [
                .target(name: "CLibJPEG", condition: linux),
                .target(name: "CLibPNG", condition: linux),
            ]),
        .target(
            name: "Imago",
            dependencies: [
                .target(name: "CImagoCodecs", condition: linux),
                .target(name: "CLibPNG", condition: linux),
                .target(name: "CLibWebP", condition: linux),
                .target(name: "CGIFLib", condition: linux),
                .target(name: "CLibTIFF", condition: linux),
                .target(name: "CLibAVIF", condition: linux),
                .target(name: "CLibHEIF", condition: linux),
                .target(name: "CLCMS2", condition: linux),
                .target(name: "CLibJXL", condition: linux),
                .target(name: "CImagoSystem", condition: linux),
                .target(name: "CCurl", condition: linux),
                .target(name: "CHiredis", condition: linux),
            ]),
        .target(name: "ImagoUI", dependencies: ["Imago"]),
        .target(name: "ImagoCommandLine", dependencies: [.target(name: "CImagoSystem", condition: linux)]),
        .executableTarget(name: "imago", dependencies: ["Imago", "ImagoCommandLine"]),
        // The support code of Imago's own tests (the test server, fixtures, waiting,
        // the controlled loader, the recording view): a target, not a product, so it
        // never ships. The GTK package compiles the same sources as a target of its
        // own (Integrations/GTK/Tests/_ImagoTestSupport is a symbolic link here).
        .target(name: "_ImagoTestSupport", dependencies: ["Imago", "ImagoUI"], path: "Tests/_ImagoTestSupport"),
        // A test target per product. Fixtures are read from the source tree by path
        // (Tests/ImagoTests/Fixtures, for all three), not bundled. Helpers that need
        // the library's internals are files of one test target, symbolic links in
        // another (their Support folders).
        .testTarget(name: "ImagoTests", dependencies: ["Imago", "_ImagoTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "ImagoUITests", dependencies: ["Imago", "ImagoUI", "_ImagoTestSupport"]),
        // The tests that run the `imago` tool (Support/Tool.swift): depending on its
        // target makes every build of these tests build the tool first, beside them.
        .testTarget(name: "ImagoToolTests", dependencies: ["Imago", "imago", "ImagoCommandLine", "_ImagoTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
