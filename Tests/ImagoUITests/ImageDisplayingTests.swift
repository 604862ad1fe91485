import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// `setImage(with:)`, `imageURL` and `cancelImageLoad()` on a view, modelled on
/// SDWebImage's `UIImageView+WebCache` and AsyncImageView's `imageURL`.
@MainActor @Suite struct ImageDisplayingTests {
    let network = ControlledLoader()
    let loader: ImageLoader
    let targets: ImageTargetLoader
    let placeholder = try! ImageDecoders.Registry.shared.decode(pngData(1))

    init() {
        loader = ImageLoader(configuration: .init(dataLoader: network, retryPolicy: .none), cache: ImageCache())
        targets = ImageTargetLoader(loader: loader)
    }

    static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1:9/\(n).png")! }

    /// Sets `url` on `view` and waits for the completion.
    func load(_ url: URL?, on view: RecordingView, options: ImageDisplayOptions = ImageDisplayOptions()) async -> Result<ImageResponse, ImagoError>? {
        await withCheckedContinuation { continuation in
            let completed = Locked(false)
            view.setImage(with: url, placeholder: placeholder, options: options) { result in
                completed.withLock { $0 = true }
                continuation.resume(returning: result)
            }
            // A nil URL loads nothing and calls no completion.
            if url == nil, !completed.withLock({ $0 }) { continuation.resume(returning: nil) }
        }
    }

    /// A cancelled load displays nothing, but the view hears that it ended: a loading
    /// view's indicator stops, its image stays. A cancel by URL reaching the main
    /// actor after a newer call of the view leaves that call's indicator running.
    @Test func aCancelledLoadEndsTheViewsLoading() async throws {
        let view = RecordingView(targets)
        view.setImage(with: Self.url(1), placeholder: placeholder)
        #expect(view.state.isLoading && view.state.isActivityIndicatorVisible)
        view.cancelImageLoad()
        #expect(view.cancellations == 1 && !view.state.isLoading && !view.state.isActivityIndicatorVisible)
        #expect(view.contents.map(\.phase) == [.loading] && view.state.image?.bitmap[0, 0].r == 1)

        // Replaced by a newer call, the load ends; the newer one shows its indicator.
        view.setImage(with: Self.url(2), placeholder: placeholder)
        view.setImage(with: Self.url(3), placeholder: placeholder) { _ in }
        #expect(view.cancellations == 2 && view.state.isLoading && view.state.isActivityIndicatorVisible)

        // Cancelled by URL: the view hears of it on the main actor later, after a newer call.
        let heard = Locked(false)
        view.setImage(with: Self.url(3), placeholder: placeholder) { result in
            if case .failure(.cancelled) = result { heard.withLock { $0 = true } }
        }
        targets.cancelLoading(url: Self.url(3))
        view.setImage(with: Self.url(4), placeholder: placeholder)
        await waitUntil { heard.withLock { $0 } }
        #expect(view.cancellations == 3 && view.state.isActivityIndicatorVisible, "a late cancel stopped a newer load's indicator")

        targets.cancelLoading(url: Self.url(4))
        await waitUntil { view.cancellations != 3 }
        #expect(view.cancellations == 4 && !view.state.isLoading && !view.state.isActivityIndicatorVisible)
    }

    @Test func thePlaceholderShowsWhileLoadingThenTheImageFadesIn() async throws {
        let view = RecordingView(targets, size: .thumbnail(1))
        let url = Self.url(1)
        let done = Task { await load(url, on: view) }
        await waitUntil { network.seen.started.count == 1 }
        #expect(view.contents.map(\.phase) == [.loading])
        #expect(view.contents[0].image?.bitmap[0, 0].r == 1 && view.contents[0].showsActivityIndicator)
        network.release(url, with: ok(url, 40))
        let result = await done.value
        #expect((try? result?.get())?.source == .network)
        #expect(view.contents.map(\.phase) == [.loading, .success])
        #expect(view.contents[1].transition == .crossfade(seconds: 0.4) && !view.contents[1].showsActivityIndicator)
        // The view's size decides the size decoded.
        #expect(view.contents[1].image?.width == 1 && view.shade == 40)
        #expect(view.imageURL == url)
    }

    @Test func aCachedImageIsShownBeforeTheCallReturnsWithoutAFade() async throws {
        let view = RecordingView(targets)
        let url = Self.url(2)
        loader.cache?.setImage(try ImageDecoders.Registry.shared.decode(pngData(50)), forKey: ImageRequest(url: url).cacheKey)
        view.setImage(with: url, placeholder: placeholder)
        #expect(view.contents.map(\.phase) == [.success] && view.contents[0].transition == .none && view.shade == 50)
        #expect(network.started.isEmpty)
    }

    @Test func aNilURLShowsThePlaceholderAndLoadsNothing() async throws {
        let view = RecordingView(targets)
        #expect(await load(nil, on: view) == nil)
        #expect(view.contents.map(\.phase) == [.empty] && view.shade == 1 && !view.contents[0].showsActivityIndicator)
        #expect(view.imageURL == nil && network.started.isEmpty)
    }

    /// As SDWebImage's helper restores the view's placeholder on every call: a reused
    /// cell never keeps showing the previous item's image while the next one loads.
    @Test func thePlaceholderIsRestoredOnEveryNewLoad() async throws {
        let view = RecordingView(targets)
        let first = Self.url(8), second = Self.url(9)
        network.answer(first, with: ok(first, 80))
        _ = await load(first, on: view)
        #expect(view.shade == 80)
        view.setImage(with: second, placeholder: placeholder)
        #expect(view.contents.last?.phase == .loading && view.shade == 1)
        await waitUntil { network.seen.started.count == 2 }
        network.release(second, with: ok(second, 90))
        for _ in 0..<500 where view.shade != 90 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(view.shade == 90)
        view.setImage(with: nil, placeholder: placeholder)
        #expect(view.contents.last?.phase == .empty && view.shade == 1)
    }

    @Test func aNewImageCancelsThePreviousLoad() async throws {
        let view = RecordingView(targets)
        let first = Self.url(3), second = Self.url(4)
        view.setImage(with: first)
        await waitUntil { network.seen.started.count == 1 }
        network.answer(second, with: ok(second, 70))
        _ = await load(second, on: view)
        await waitUntil { network.seen.cancelled == [first.absoluteString] }
        #expect(view.shade == 70 && view.imageURL == second)
    }

    @Test func aFailureShowsTheFailureImage() async throws {
        let view = RecordingView(targets)
        let url = Self.url(404)
        network.answer(url, with: ok(url, status: 404))
        let failureImage = try ImageDecoders.Registry.shared.decode(pngData(99))
        let result = await load(url, on: view, options: ImageDisplayOptions(showsActivityIndicator: false, failureImage: failureImage))
        guard case .failure(.httpStatus(404, _))? = result else { Issue.record("\(String(describing: result))"); return }
        #expect(view.contents.map(\.phase) == [.loading, .failure])
        #expect(!view.contents[0].showsActivityIndicator && view.shade == 99)
    }

    @Test func imageURLSetsImagesInTheOrderSet() async throws {
        let view = RecordingView(targets)
        let thumbnail = Self.url(5), full = Self.url(6)
        var events = targets.events.makeAsyncIterator()
        view.imageURL = thumbnail
        view.imageURL = full
        #expect(view.imageURL == full)
        await waitUntil { network.seen.started.count == 2 }
        network.release(full, with: ok(full, 60))
        #expect(await events.next()?.url == full)
        await waitUntil { network.seen.cancelled == [thumbnail.absoluteString] }
        #expect(view.contents.compactMap { $0.image?.bitmap[0, 0].r } == [60])
        view.imageURL = nil
        #expect(view.imageURL == nil && view.contents.last?.phase == .empty)
    }

    @Test func cancelImageLoadStopsTheTransferAndKeepsWhatIsShown() async throws {
        let view = RecordingView(targets)
        let url = Self.url(7)
        view.setImage(with: url, placeholder: placeholder)
        await waitUntil { network.seen.started.count == 1 }
        view.cancelImageLoad()
        await waitUntil { network.seen.cancelled == [url.absoluteString] }
        #expect(view.contents.map(\.phase) == [.loading])
    }

    @Test func aBundleImageComesFromTheNamedImageCacheAndIsNeverCachedAgain() async throws {
        final class BundleView: RecordingView {
            var asked: [String] = []
            let named: DecodedImage
            init(_ targets: ImageTargetLoader, named: DecodedImage) {
                self.named = named
                super.init(targets)
            }
            override func bundledImage(named name: String) -> DecodedImage? {
                asked.append(name)
                return name.hasSuffix("missing.png") ? nil : self.named
            }
        }
        let named = try ImageDecoders.Registry.shared.decode(pngData(33))
        let view = BundleView(targets, named: named)
        let url = Bundle.main.bundleURL.appendingPathComponent("icons/star.png")
        var response: ImageResponse?
        view.setImage(with: url, placeholder: placeholder) { response = try? $0.get() }
        // Shown before the call returned, with nothing loaded and nothing cached.
        #expect(view.asked == ["icons/star.png"] && view.contents.map(\.phase) == [.success] && view.shade == 33)
        #expect(response?.source == .local && view.imageURL == url)
        #expect(network.started.isEmpty && loader.cache?.image(forKey: ImageRequest(url: url).cacheKey) == nil)
        // The imageURL setter takes the same way: from the named-image cache, not the pipeline.
        let other = Bundle.main.bundleURL.appendingPathComponent("icons/moon.png")
        view.imageURL = other
        #expect(view.asked.last == "icons/moon.png" && view.contents.last?.phase == .success && network.started.isEmpty)
        // Not in the bundle's cache: loaded as any file.
        let missing = Bundle.main.bundleURL.appendingPathComponent("missing.png")
        view.setImage(with: missing)
        await waitUntil { network.seen.started == [missing.absoluteString] }
    }

    @Test func onlyFilesInsideTheBundleAreBundleImages() {
        let bundle = BundledImages(bundleURL: URL(fileURLWithPath: "/apps/Demo.app"))
        #expect(bundle.resourceName(of: URL(fileURLWithPath: "/apps/Demo.app/star.png")) == "star.png")
        #expect(bundle.resourceName(of: URL(fileURLWithPath: "/apps/Demo.app/icons/./a/../star.png")) == "icons/star.png")
        #expect(bundle.resourceName(of: URL(fileURLWithPath: "/apps/Demo.app/../secret.png")) == nil)
        #expect(bundle.resourceName(of: URL(fileURLWithPath: "/apps/Demo.apple/star.png")) == nil)
        #expect(bundle.resourceName(of: URL(fileURLWithPath: "/apps/Demo.app")) == nil)
        #expect(bundle.resourceName(of: URL(string: "https://example.com/apps/Demo.app/star.png")!) == nil)
    }

    /// Many views reused at random, as cells of a scrolling list: each ends on the
    /// image of the last URL set on it, and none ever shows an older one after it.
    @Test func aReuseStormEndsOnTheLastURLOfEachView() async throws {
        let urls = (0..<40).map { Self.url(1000 + $0) }
        for (n, url) in urls.enumerated() { network.answer(url, with: ok(url, UInt8(n + 10))) }
        let views = (0..<20).map { _ in RecordingView(targets) }
        for _ in 0..<1000 {
            let view = views.randomElement()!
            if Bool.random() { view.setImage(with: urls.randomElement()!) } else { view.imageURL = urls.randomElement()! }
            if Int.random(in: 0..<10) == 0 { await Task.yield() }
        }
        var last: [ObjectIdentifier: Int] = [:]
        for view in views {
            let n = Int.random(in: 0..<urls.count)
            last[ObjectIdentifier(view)] = n
            _ = await load(urls[n], on: view)
        }
        // Whatever was still on its way lands now, or never.
        for _ in 0..<20 { await Task.yield() }
        for view in views {
            let n = try #require(last[ObjectIdentifier(view)])
            #expect(view.shade == UInt8(n + 10))
            #expect(view.imageURL == urls[n])
        }
    }
}
