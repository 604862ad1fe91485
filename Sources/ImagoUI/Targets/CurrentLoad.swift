import Foundation
import Imago

/// The load a view of one image runs now (`ImageLoadModel`, SwiftUI's `RemoteImage`),
/// and how urgent it is: off screen it goes on at the lowest priority, so that what is
/// on screen loads first, and back on screen at the priority asked for, as Nuke's
/// `LazyImage` does. Its progress is handed on while it is the current load.
@MainActor
final class CurrentLoad {
    /// The task of the current load, while it runs.
    private(set) var task: ImageTask?
    /// The priority the current load asked for.
    private var requestedPriority = ImageRequest.Priority.normal
    /// Whether the view is on screen.
    var isVisible = true {
        didSet { if oldValue != isVisible { task?.priority = priority } }
    }

    /// The priority the load runs at now.
    var priority: ImageRequest.Priority { isVisible ? requestedPriority : .veryLow }

    /// `options` as a new load starts with them: at the lowest priority while the
    /// view is off screen.
    func starting(with options: ImageDisplayOptions) -> ImageDisplayOptions {
        requestedPriority = options.priority
        var options = options
        options.priority = priority
        return options
    }

    /// The load started as `task` (nil: nothing to load); `progress` hears of its
    /// bytes while it is the current load.
    func started(_ task: ImageTask?, progress: @escaping @MainActor (ImageTask.Progress) -> Void) {
        self.task = task
        guard let task else { return }
        let updates = task.progress
        Task { @MainActor [weak self] in
            for await update in updates {
                guard let self, self.task === task else { return }
                progress(update)
            }
        }
    }

    /// The current load ended (or was cancelled).
    func ended() {
        task = nil
    }
}
