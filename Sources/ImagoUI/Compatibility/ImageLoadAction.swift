import Imago

/// Names one target-bound load, as a selector does in AsyncImageView: loads set with
/// the same action on the same target are set in the order they were made, can be
/// cancelled and looked up together. Two actions are the same when their names are.
public struct ImageLoadAction: Hashable, Sendable {
    /// What identifies the action.
    public let name: String
    let handler: @MainActor @Sendable (AnyObject, ImageResponse) -> Void

    /// An action called `name`, calling `handler` on the main actor with the target
    /// and the image when its load succeeds. Failures arrive by notification, as in
    /// AsyncImageView. The target is passed in, held weakly until then, so the
    /// handler need not capture it (and keep it alive).
    public init(_ name: String, handler: @escaping @MainActor @Sendable (_ target: AnyObject, _ response: ImageResponse) -> Void) {
        self.name = name
        self.handler = handler
    }

    public static func == (lhs: ImageLoadAction, rhs: ImageLoadAction) -> Bool { lhs.name == rhs.name }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
