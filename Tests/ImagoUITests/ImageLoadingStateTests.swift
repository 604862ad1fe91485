import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// The rules of the loading view (AsyncImageView's spinner and crossfade), driven
/// by a clock the test sets.
@MainActor @Suite struct ImageLoadingStateTests {
    final class Clock {
        var seconds = 100.0
    }

    let clock = Clock()
    let state: ImageLoadingState
    let placeholder = try! ImageDecoders.Registry.shared.decode(pngData(1))
    let photo = try! ImageDecoders.Registry.shared.decode(pngData(2))

    init() {
        let clock = self.clock
        state = ImageLoadingState { clock.seconds }
    }

    func content(_ phase: ImageDisplayContent.Phase, _ image: DecodedImage?, indicator: Bool = true,
                 transition: ImageTransition = .crossfade(seconds: 0.4)) -> ImageDisplayContent {
        ImageDisplayContent(phase: phase, image: image, showsActivityIndicator: indicator, transition: transition)
    }

    @Test func theIndicatorShowsWhileLoadingAndHidesAtTheEnd() {
        state.apply(content(.loading, placeholder))
        #expect(state.isLoading && state.isActivityIndicatorVisible && state.image?.bitmap[0, 0].r == 1)
        state.apply(content(.success, photo))
        #expect(!state.isLoading && !state.isActivityIndicatorVisible)
        state.apply(content(.loading, nil))
        state.apply(content(.failure, placeholder, transition: .none))
        #expect(!state.isActivityIndicatorVisible && state.image?.bitmap[0, 0].r == 1)
        // Options can turn it off for a load too.
        state.apply(content(.loading, nil, indicator: false))
        #expect(!state.isActivityIndicatorVisible)
    }

    @Test func showsActivityIndicatorReachesTheNextLoadNotTheRunningOne() {
        state.apply(content(.loading, nil))
        state.showsActivityIndicator = false
        #expect(state.isActivityIndicatorVisible)
        state.apply(content(.success, photo))
        state.apply(content(.loading, nil))
        #expect(!state.isActivityIndicatorVisible)
        state.showsActivityIndicator = true
        #expect(!state.isActivityIndicatorVisible)
    }

    @Test func changingTheIndicatorStyleDuringALoadHidesIt() {
        state.apply(content(.loading, nil))
        state.activityIndicatorStyle = .medium
        #expect(state.isActivityIndicatorVisible, "the same style changes nothing")
        state.activityIndicatorStyle = .large
        #expect(!state.isActivityIndicatorVisible && state.isLoading)
    }

    @Test func aNewImageFadesInOverCrossfadeDuration() {
        state.apply(content(.success, placeholder, transition: .none))
        #expect(state.crossfadeProgress == 1 && !state.isCrossfading)
        state.apply(content(.success, photo))
        #expect(state.image?.bitmap[0, 0].r == 2 && state.previousImage?.bitmap[0, 0].r == 1)
        #expect(state.crossfadeProgress == 0 && state.isCrossfading)
        clock.seconds += 0.1
        #expect(abs(state.crossfadeProgress - 0.25) < 1e-9)
        clock.seconds += 0.31
        #expect(state.crossfadeProgress == 1 && !state.isCrossfading && state.previousImage == nil)
    }

    @Test func aZeroDurationOrAMemoryHitShowsTheImageAtOnce() {
        state.crossfadeDuration = 0
        #expect(state.displayOptions.crossfadeDuration == 0)
        state.apply(content(.success, photo, transition: .crossfade(seconds: state.displayOptions.crossfadeDuration)))
        #expect(!state.isCrossfading && state.previousImage == nil)
        state.crossfadeDuration = 0.4
        state.apply(content(.success, placeholder, transition: .none))
        #expect(!state.isCrossfading && state.image?.bitmap[0, 0].r == 1)
    }
}
