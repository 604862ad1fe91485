import Foundation

extension ImageLoader {
    /// How long after `noteInteraction()` the user is still taken to be interacting.
    public static let interactionWindow = 0.5

    /// Tells every loader that the user is interacting now (scrolling, dragging):
    /// for the next `interactionWindow` seconds, on Linux, decodes and processings
    /// that start run at the `background` quality of service, nice 10 there, below
    /// the main thread (unless `Configuration.decodingYieldsToInteraction` is off),
    /// so the main thread gets a core the moment it wants one and frames are not
    /// dropped behind decodes; the others run at `userInitiated`, as fast as the
    /// cores allow. A GTK `ImageGrid` calls it as it scrolls; a view of your
    /// own that scrolls or animates while images load calls it on each step. On Apple
    /// platforms, where decodes run below the main thread's quality of service
    /// anyway, it does nothing. Cheap: one lock, no allocation.
    public static func noteInteraction() {
        #if os(Linux)
        UserInteraction.note(lasting: interactionWindow)
        #endif
    }
}
