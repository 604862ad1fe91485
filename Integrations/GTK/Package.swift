// swift-tools-version:6.0
import PackageDescription

// GTK 4 lives in a package of its own so that Imago's core, and everyone who uses it,
// never needs GTK installed to build.
let package = Package(
    name: "ImagoGTK",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ImagoGTK", targets: ["ImagoGTK"]),
        .executable(name: "imago-gallery", targets: ["imago-gallery"]),
    ],
    dependencies: [
        .package(name: "Imago", path: "../.."),
    ],
    targets: [
        .systemLibrary(
            name: "CGTK", pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]),
        // What Swift cannot say itself: libdispatch's main-queue hooks (which its
        // headers do not declare) fed into the GLib main loop.
        .target(name: "CImagoGTK", dependencies: ["CGTK"]),
        .target(
            name: "ImagoGTK",
            dependencies: ["CGTK", "CImagoGTK", .product(name: "Imago", package: "Imago")]),
        .executableTarget(name: "imago-gallery", dependencies: ["ImagoGTK", "CGTK"]),
        .testTarget(name: "ImagoGTKTests", dependencies: ["ImagoGTK", "CGTK"]),
    ],
    swiftLanguageModes: [.v6]
)
