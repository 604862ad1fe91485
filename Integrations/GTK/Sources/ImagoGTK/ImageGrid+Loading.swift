import Foundation
import Imago
import ImagoUI

/// Which loads run and in what order: the cells near the screen first, the rows
/// ahead prefetched, and the loads no cell waits for kept going behind everything.
extension ImageGrid {
    func load(_ cell: Cell) {
        guard let url = cell.url else { return }
        cell.binding += 1
        let binding = cell.binding
        cell.loading = true
        cell.loadStarted = monotonicSeconds()
        statistics.inFlight += 1
        var options = options
        options.targetSize = cellTargetSize
        let task = cell.view.setImage(with: url, placeholder: placeholder, options: options) { [weak self, weak cell] result in
            guard let self, let cell, cell.binding == binding, cell.loading else { return }
            cell.loading = false
            cell.task = nil
            var statistics = self.statistics
            statistics.inFlight -= 1
            switch result {
            case .success(let response):
                cell.done = true
                statistics.loaded += 1
                if response.source == .memory { statistics.memoryHits += 1 }
                if response.source == .disk || response.source == .revalidated { statistics.diskHits += 1 }
            case .failure(.cancelled):
                // The cell was unbound, rebound or scrolled away: nothing failed.
                break
            case .failure(let error):
                statistics.failed += 1
                if let index = cell.index { self.didFail?(cell.view, index, error) }
                // Out of time is no answer (see `askAgain`); a 404 or bytes that are
                // no image are, and stay shown.
                if case .timedOut = error { self.askAgain(cell, binding: binding) } else { cell.done = true }
            }
            self.statistics = statistics
        }
        if cell.loading, cell.binding == binding { cell.task = task }
        // The cell's own load has joined any prefetch or kept load of its URL, which
        // are no longer needed.
        var joined = keptLoads.filter { $0.url == url }.map(\.task)
        keptLoads.removeAll { $0.url == url }
        if let prefetch = prefetches.removeValue(forKey: url) { joined.append(prefetch) }
        if !joined.isEmpty { targetLoader.loader.cancel(joined) }
    }

    /// A cell whose load ran out of time has no answer yet: the deadline counts the
    /// wait in the queue, so after a scroll storm the loads of cells on screen time out
    /// behind others without a request made. The cell is asked again as it comes near
    /// the screen; one still near asks again at once, unless its load failed within
    /// `timeoutRetrySpacing` (a short timeout, a failure the loader remembers), so
    /// that a server that never answers in time costs a request per timeout, not a
    /// loop: such a cell shows its failure until it leaves and comes back.
    private func askAgain(_ cell: Cell, binding: Int) {
        let lasted = monotonicSeconds() - cell.loadStarted
        guard let index = cell.index, rows(extendedBy: Self.nearRows).contains(index) else {
            // Loaded by `updateLoads` when it scrolls near.
            return
        }
        guard lasted >= Self.timeoutRetrySpacing else {
            cell.done = true
            cell.awaitsRetry = true
            return
        }
        // Once the completion that told of the timeout has returned.
        DispatchQueue.main.async { [weak self, weak cell] in
            MainActor.assumeIsolated {
                guard let self, let cell, cell.binding == binding, !cell.loading, !cell.done else { return }
                self.load(cell)
            }
        }
    }

    /// Stops the load of a cell that GTK rebinds or unbinds before its image came. Its
    /// view will show nothing of it; the load itself goes on for the caches, at the
    /// lowest priority, among the latest `keptLoadLimit`.
    func stopLoading(_ cell: Cell) {
        guard cell.loading else { return }
        // Counted first: the cancelled load's completion, told at once, is then one
        // of an earlier binding and counts nothing.
        cell.loading = false
        let task = cell.task
        cell.task = nil
        cell.binding += 1
        statistics.inFlight -= 1
        if let task, let url = cell.url, keptLoadLimit > 0, !task.isFinished {
            // Made before the view's is cancelled, so the transfer and decode they
            // share never lose their last waiter.
            keep(targetLoader.loader.task(with: task.request), for: url)
        }
        cell.view.cancelImageLoad()
    }

    /// Lets `task`, which no cell waits for, go on behind everything else, so that its
    /// image lands in the caches; the oldest such loads beyond `keptLoadLimit` are
    /// cancelled.
    private func keep(_ task: ImageTask, for url: URL) {
        task.priority = .veryLow
        keptLoads.removeAll { $0.task.isFinished }
        keptLoads.append((url, task))
        guard keptLoads.count > keptLoadLimit else { return }
        let dropped = keptLoads.prefix(keptLoads.count - keptLoadLimit)
        keptLoads.removeFirst(dropped.count)
        targetLoader.loader.cancel(dropped.map(\.task))
    }

    /// Starts the loads of the bound cells near the screen that have none, and puts
    /// those of cells that left it behind everything else (`veryLow`), so that what is
    /// on screen is next in line; a transfer under way is not thrown away, since the
    /// cell may well come back.
    func updateLoads() {
        let near = rows(extendedBy: Self.nearRows)
        for cell in cells.values {
            guard let index = cell.index else { continue }
            if !near.contains(index), cell.awaitsRetry {
                // Timed out: asked again when it comes back.
                cell.awaitsRetry = false
                cell.done = false
            }
            guard !cell.done else { continue }
            if near.contains(index) {
                if !cell.loading { load(cell) } else { cell.task?.priority = options.priority }
            } else {
                cell.task?.priority = .veryLow
            }
        }
    }

    /// Loads what scrolled near, lowers what scrolled away, prefetches the rows beyond
    /// in the direction of scrolling, and lets the prefetches that fell behind go on
    /// among the kept loads (a prefetch is stopped only as they are).
    func scrolled() {
        let value = gtk_adjustment_get_value(verticalAdjustment)
        let downwards = value >= lastScrollValue
        lastScrollValue = value
        updateLoads()
        let near = rows(extendedBy: Self.nearRows)
        guard !near.isEmpty else { return }
        let ahead = columns * prefetchRows
        let range = downwards
            ? near.upperBound..<min(count, near.upperBound + ahead)
            : max(0, near.lowerBound - ahead)..<near.lowerBound
        // Nearest first.
        let ordered = (downwards ? Array(range) : range.reversed()).compactMap(request(for:))
        let wanted = Dictionary(ordered.map { ($0.url, $0) }) { first, _ in first }
        // A prefetch whose row has come near goes on: its cell, bound in the coming
        // layout, joins its transfer rather than starting the request over.
        let nearURLs = Set(near.compactMap(url(at:)))
        for (url, task) in prefetches where task.isFinished || (wanted[url] == nil && !nearURLs.contains(url)) {
            prefetches[url] = nil
            if !task.isFinished { keep(task, for: url) }
        }
        for var request in ordered where prefetches[request.url] == nil {
            request.priority = .low
            prefetches[request.url] = targetLoader.loader.task(with: request)
        }
    }
}
