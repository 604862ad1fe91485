// The part of SwiftUI that Imago uses, declared as the SDK declares it (actor
// isolation, availability), for scripts/check-apple.sh. The view builder and the
// modifiers return their receiver: only their signatures matter here. Static constants
// of types SwiftUI (in a Swift 5 module) does not make Sendable are `nonisolated(unsafe)`.
@_exported import CoreGraphics
#if canImport(UIKit)
@_exported import UIKit
#elseif canImport(AppKit)
@_exported import AppKit
#endif

@MainActor @preconcurrency
public protocol View {
    associatedtype Body: View
    @ViewBuilder var body: Body { get }
}

extension Never: View {
    public var body: Never { fatalError() }
}

@resultBuilder
public struct ViewBuilder {
    public static func buildBlock() -> EmptyView { EmptyView() }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock<each Content: View>(_ content: repeat each Content) -> TupleView<(repeat each Content)> {
        TupleView((repeat each content))
    }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { content }
    public static func buildEither<TrueContent: View, FalseContent: View>(first: TrueContent) -> _ConditionalContent<TrueContent, FalseContent> {
        _ConditionalContent()
    }
    public static func buildEither<TrueContent: View, FalseContent: View>(second: FalseContent) -> _ConditionalContent<TrueContent, FalseContent> {
        _ConditionalContent()
    }
}

extension Optional: View where Wrapped: View {
    public var body: Never { fatalError() }
}

public struct EmptyView: View {
    nonisolated public init() {}
    public var body: Never { fatalError() }
}

public struct TupleView<T>: View {
    nonisolated public init(_ value: T) {}
    public var body: Never { fatalError() }
}

public struct _ConditionalContent<TrueContent: View, FalseContent: View>: View {
    public var body: Never { fatalError() }
}

public struct ZStack<Content: View>: View {
    public init(alignment: Alignment = .center, @ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError() }
}

public struct Alignment: Sendable {
    public static let center = Alignment()
}

public struct Image: View {
    #if canImport(UIKit)
    public init(uiImage: UIImage) {}
    #elseif canImport(AppKit)
    public init(nsImage: NSImage) {}
    #endif
    public init(decorative cgImage: CGImage, scale: CGFloat, orientation: Image.Orientation = .up) {}
    public enum Orientation: UInt8, Sendable {
        case up, upMirrored, down, downMirrored, left, leftMirrored, right, rightMirrored
    }
    public func resizable() -> Image { self }
    public var body: Never { fatalError() }
}

public struct Color: View {
    public static let gray = Color()
    public static let clear = Color()
    public var body: Never { fatalError() }
}

public struct Circle: Shape {
    public init() {}
}

public protocol Shape {}

public struct AnyTransition {
    nonisolated(unsafe) public static let opacity = AnyTransition()
}

public struct Animation: Equatable {
    public static func easeInOut(duration: Double) -> Animation { Animation() }
    nonisolated(unsafe) public static let `default` = Animation()
}

public struct ContentMode: Sendable {
    public static let fit = ContentMode()
    public static let fill = ContentMode()
}

public struct EnvironmentValues {
    public var displayScale: CGFloat { 1 }
}

@propertyWrapper
public struct Environment<Value>: DynamicProperty {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    public var wrappedValue: Value { fatalError() }
}

public protocol DynamicProperty {}

@propertyWrapper
public struct State<Value>: DynamicProperty {
    public init(wrappedValue value: Value) { self.value = value }
    private var value: Value
    public var wrappedValue: Value {
        get { value }
        nonmutating set {}
    }
}

extension View {
    public func frame(width: CGFloat? = nil, height: CGFloat? = nil, alignment: Alignment = .center) -> some View { self }
    public func clipShape<S: Shape>(_ shape: S) -> some View { self }
    public func scaledToFill() -> some View { self }
    public func scaledToFit() -> some View { self }
    public func transition(_ t: AnyTransition) -> some View { self }
    public func animation<V: Equatable>(_ animation: Animation?, value: V) -> some View { self }
    public func onAppear(perform action: (() -> Void)? = nil) -> some View { self }
    public func onDisappear(perform action: (() -> Void)? = nil) -> some View { self }
    @available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
    public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some View { self }
    @available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
    public func onGeometryChange<T: Equatable>(
        for type: T.Type, of transform: @escaping @Sendable (GeometryProxy) -> T, action: @escaping (T) -> Void
    ) -> some View { self }
}

public struct GeometryProxy {
    public var size: CGSize { .zero }
}

extension View {
    public func id<ID: Hashable>(_ id: ID) -> some View { self }
}

@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
public enum TimelineScheduleMode {
    case normal
    case lowFrequency
}

@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
public protocol TimelineSchedule {
    typealias Mode = TimelineScheduleMode
    associatedtype Entries: Sequence where Entries.Element == Date
    func entries(from startDate: Date, mode: Mode) -> Entries
}

@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
public struct TimelineViewDefaultContext {
    public let date: Date
}

@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
public struct TimelineView<Schedule: TimelineSchedule, Content> {
    public typealias Context = TimelineViewDefaultContext
}

@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
extension TimelineView: View where Content: View {
    public init(_ schedule: Schedule, @ViewBuilder content: @escaping (TimelineView<Schedule, Content>.Context) -> Content) {}
    public var body: Never { fatalError() }
}
