import Foundation

/// The original bytes of an image, as its server sent them, with where they came from.
public struct ImageDataResponse: Sendable {
    /// The bytes, undecoded.
    public let data: Data
    /// The URL requested.
    public let url: URL
    /// Which tier answered: `.recent`, `.disk`, `.revalidated`, `.shared`,
    /// `.network` or `.local` (never `.memory`, which keeps decoded images only).
    public let source: ImageResponse.Source
    /// What the load cost (no decoding).
    public let metrics: ImageResponse.Metrics
}

extension ImageLoader {
    /// The original bytes of `request`'s image, undecoded: to save or share a file,
    /// or to hand it to a decoder of one's own. Nuke's `data(for:)`, SDWebImage's
    /// `SDWebImageDownloader` through the cache.
    ///
    /// The bytes come the way an image's do: from the recent originals, the disk and
    /// shared tiers under the request's cache policy, else one transfer shared with
    /// every load of the image key in flight (images of any size included), queued at
    /// the request's priority and bounded by `loadingTimeout`. The size and
    /// processors of `request` are ignored. Throws `ImagoError`, or
    /// `CancellationError` when the calling task is cancelled (which leaves the
    /// shared transfer, stopped when nobody else waits). The request's alternative
    /// and constrained URLs are tried as `image(for:)` tries them.
    ///
    /// ```swift
    /// let original = try await ImageLoader.shared.data(for: ImageRequest(url: photoURL))
    /// try original.data.write(to: URL(fileURLWithPath: "/tmp/photo.jpg"))
    /// ```
    public func data(for request: ImageRequest) async throws -> ImageDataResponse {
        try await firstSuccess(of: request) { try await self.originalData(for: $0) }
    }

    private func originalData(for request: ImageRequest) async throws -> ImageDataResponse {
        guard request.hasURL, configuration.dataLoader.canLoad(request.url) else {
            throw ImagoError.invalidURL(request.url.absoluteString)
        }
        switch await pipeline.originalData(for: request) {
        case .success(let original):
            guard let data = original.bytes.load() else {
                throw ImagoError.fileError(
                    path: request.url.absoluteString, reason: "the stored image could not be read back", errno: nil)
            }
            return ImageDataResponse(data: data, url: request.url, source: original.source, metrics: original.metrics)
        case .failure(.cancelled):
            throw CancellationError()
        case .failure(let error):
            throw error
        }
    }

    /// The original bytes at `url`.
    public func data(for url: URL) async throws -> ImageDataResponse {
        try await data(for: ImageRequest(url: url))
    }
}
