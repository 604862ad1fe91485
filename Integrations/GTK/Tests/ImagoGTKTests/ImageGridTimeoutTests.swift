import Foundation
import Imago
import ImagoUI
import ImagoGTK
import _ImagoTestSupport
import Testing

/// A grid whose loads run out of time, in a real GTK window: the loader's deadline
/// counts the wait for a free transfer, so with few transfers and a slow server the
/// loads of cells on screen time out in the queue before any request is made.
@MainActor @Suite(.display, .gtkWindows) struct ImageGridTimeoutTests {
    /// One transfer at a time, a server taking 0.3 s an image and loads given 1.5 s:
    /// most of the sixteen cells near the screen run out of time waiting in the queue.
    /// Out of time is no answer: once the grid settles, every cell on screen shows its
    /// own image, each asked of the server.
    @Test func cellsWhoseLoadsRanOutOfTimeInTheQueueAskAgain() async throws {
        let server = try TestServer.colours(60) { 0.3 }
        defer { server.stop() }
        let loader = ImageLoader(configuration: .init(), cache: ImageCache(memoryPressure: nil))
        loader.concurrentLoads = 1
        loader.loadingTimeout = 1.5
        let grid = ImageGrid(urls: (0..<60).map { server.url("/img/\($0)") }, cellSize: 40, targetLoader: ImageTargetLoader(loader: loader))
        var timeouts = 0, otherFailures: [String] = []
        grid.didFail = { _, index, error in
            if case .timedOut = error { timeouts += 1 } else { otherFailures.append("item \(index): \(error)") }
        }
        let window = await GTK.window(width: 200, height: 120, child: grid.widget)
        defer { window.close() }

        await GTK.waitUntil("every cell on screen showed an image: \(grid.statistics), \(timeouts) timeouts", seconds: 40) {
            let visible = grid.visibleRange
            return grid.columns == 4 && grid.statistics.inFlight == 0 && !visible.isEmpty
                && grid.boundCells.filter { visible.contains($0.index) }.allSatisfy {
                    $0.view.loadingState.image != nil && !$0.view.loadingState.isCrossfading
                }
        }
        await GTK.run(for: 0.1)
        #expect(timeouts > 0, "loads ran out of time in the queue")
        #expect(otherFailures == [])

        let capture = try await GTK.capture(window.widget)
        var checked = 0
        for (index, x, y) in grid.cellCentresOnScreen(in: window) {
            let found = Pixels.index(of: capture[x, y])
            #expect(found.index == index && found.distance <= 6, "the cell of item \(index) at (\(x), \(y)) shows its own image")
            #expect(server.count(for: "/img/\(index)") >= 1, "item \(index) was asked of the server")
            checked += 1
        }
        #expect(checked >= 8, "two rows of four cells show whole: \(checked)")
        print("loads out of time in the queue: \(timeouts); \(grid.statistics)")
    }
}
