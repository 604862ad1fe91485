import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ImageRequest {
    /// The URLs `ImageLoader.image(for:)` and `data(for:)` load, in order: the
    /// constrained URL first when the network is constrained, then the request's
    /// URL, then its alternatives. Each but the first keeps the request's headers,
    /// size, processing, priority and policy, and is known by its own URL (its own
    /// cache key), so that a fallback's image never stands for the original's.
    func candidates(networkIsConstrained: Bool) -> [ImageRequest] {
        var plain = self
        plain.alternativeURLs = []
        plain.constrainedURL = nil
        var candidates = [plain]
        if networkIsConstrained, let constrainedURL { candidates.insert(plain.loading(constrainedURL), at: 0) }
        candidates += alternativeURLs.map { plain.loading($0) }
        return candidates
    }

    /// The same request for another URL, known by that URL.
    private func loading(_ url: URL) -> ImageRequest {
        guard var urlRequest = givenURLRequest else {
            return ImageRequest(
                url: url, targetSize: targetSize, processors: processors, priority: priority, imageKey: nil,
                options: options, cachePolicy: cachePolicy)
        }
        urlRequest.url = url
        return ImageRequest(
            urlRequest: urlRequest, targetSize: targetSize, processors: processors, priority: priority, imageKey: nil,
            options: options, cachePolicy: cachePolicy)
    }
}
