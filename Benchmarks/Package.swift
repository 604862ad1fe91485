// swift-tools-version:6.0
import PackageDescription

// Imago's benchmarks against its baselines (`make bench`, BENCHMARKS.md), in a package
// of their own so that the `imago` tool carries none of their code.
let package = Package(
    name: "ImagoBenchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "imago-bench", targets: ["imago-bench"]),
    ],
    dependencies: [
        .package(name: "Imago", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "imago-bench",
            dependencies: [
                .product(name: "Imago", package: "Imago"),
                .product(name: "_ImagoCommandLine", package: "Imago"),
                .product(name: "ImagoUI", package: "Imago"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
