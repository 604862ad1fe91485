/// Names one target-bound load, as a selector does in AsyncImageView: loads set with
/// the same action on the same target can be cancelled and looked up together. Two
/// actions are the same when their names are.
public struct ImageLoadAction: Hashable, Sendable {
    /// What identifies the action.
    public let name: String
    let handler: @MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void

    /// An action called `name`, calling `handler` on the main actor when its load
    /// finishes or fails (not when it is cancelled).
    public init(_ name: String, handler: @escaping @MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void) {
        self.name = name
        self.handler = handler
    }

    public static func == (lhs: ImageLoadAction, rhs: ImageLoadAction) -> Bool { lhs.name == rhs.name }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
