import Foundation

/// Which file URLs name images shipped inside an app bundle: those an image view
/// takes from the platform's own named-image cache (`UIImage(named:)`) instead of
/// loading and caching them again, as AsyncImageView does for bundle resources.
struct BundledImages: Sendable {
    /// The bundle of the running program.
    static let main = BundledImages(bundleURL: Bundle.main.bundleURL)

    /// The bundle's folder, as an absolute path ending in "/".
    private let root: String

    /// The images of the bundle at `bundleURL`.
    init(bundleURL: URL) {
        let path = bundleURL.standardizedFileURL.path
        root = path.hasSuffix("/") ? path : path + "/"
    }

    /// The path of `url` inside the bundle ("icons/star.png"), the name the named-image
    /// cache knows it by; nil for any URL that is not a file inside the bundle, a path
    /// that climbs out of it with "..", or the bundle folder itself.
    func resourceName(of url: URL) -> String? {
        guard url.isFileURL else { return nil }
        let path = url.standardizedFileURL.path
        guard path.hasPrefix(root), path.count > root.count else { return nil }
        return String(path.dropFirst(root.count))
    }
}
