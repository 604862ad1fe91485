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
        // headers do not declare) fed into the GLib main loop, and the ImagoPicture
        // GObject type (its header, Sources/CGTK/ImagoPicture.h, is CGTK's, so Swift
        // sees one copy of GTK's declarations).
        .target(name: "CImagoGTK", dependencies: ["CGTK"]),
        .target(
            name: "ImagoGTK",
            dependencies: ["CGTK", "CImagoGTK", .product(name: "Imago", package: "Imago"), .product(name: "ImagoUI", package: "Imago")]),
        .executableTarget(name: "imago-gallery", dependencies: ["ImagoGTK", "CGTK"]),
        // The tests' C caller: an ImagoPicture driven as a C program drives it, and the
        // variadic accessibility check Swift cannot call.
        .target(name: "CImagoGTKTestSupport", dependencies: ["CGTK"], path: "Tests/CImagoGTKTestSupport"),
        // Imago's own test support (the test server, waiting, the recording view), its
        // sources compiled here: Tests/_ImagoTestSupport is a symbolic link to the root
        // package's, which is a target there, not a product, so that it never ships.
        .target(
            name: "_ImagoTestSupport",
            dependencies: [.product(name: "Imago", package: "Imago"), .product(name: "ImagoUI", package: "Imago")],
            path: "Tests/_ImagoTestSupport"),
        .testTarget(
            name: "ImagoGTKTests",
            dependencies: ["ImagoGTK", "CGTK", "CImagoGTKTestSupport", "_ImagoTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
