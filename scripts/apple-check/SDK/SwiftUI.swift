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
    public var accessibilityReduceMotion: Bool { false }
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
    public func frame(
        minWidth: CGFloat? = nil, idealWidth: CGFloat? = nil, maxWidth: CGFloat? = nil, minHeight: CGFloat? = nil,
        idealHeight: CGFloat? = nil, maxHeight: CGFloat? = nil, alignment: Alignment = .center
    ) -> some View { self }
    public func clipShape<S: Shape>(_ shape: S) -> some View { self }
    public func scaledToFill() -> some View { self }
    public func scaledToFit() -> some View { self }
    public func transition(_ t: AnyTransition) -> some View { self }
    public func animation<V: Equatable>(_ animation: Animation?, value: V) -> some View { self }
    public func onAppear(perform action: (() -> Void)? = nil) -> some View { self }
    public func onDisappear(perform action: (() -> Void)? = nil) -> some View { self }
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
    public func onChange<V: Equatable>(of value: V, perform action: @escaping (_ newValue: V) -> Void) -> some View { self }
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
    public func background<V: View>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> some View { self }
    public func preference<K: PreferenceKey>(key: K.Type = K.self, value: K.Value) -> some View { self }
    public func onPreferenceChange<K: PreferenceKey>(_ key: K.Type = K.self, perform action: @escaping (K.Value) -> Void) -> some View
    where K.Value: Equatable { self }
}

public struct GeometryProxy {
    public var size: CGSize { .zero }
}

public struct GeometryReader<Content: View>: View {
    public init(@ViewBuilder content: @escaping (GeometryProxy) -> Content) {}
    public var body: Never { fatalError() }
}

public protocol PreferenceKey {
    associatedtype Value
    static var defaultValue: Value { get }
    static func reduce(value: inout Value, nextValue: () -> Value)
}

// Combine's, which SwiftUI's interface names as `Combine.ObservableObject`: declared
// here, as `import SwiftUI` brings them.
public protocol ObservableObject: AnyObject {}

@propertyWrapper
public struct Published<Value> {
    public init(wrappedValue: Value) { value = wrappedValue }
    private var value: Value
    public var wrappedValue: Value {
        get { value }
        set { value = newValue }
    }
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
@frozen @propertyWrapper
public struct StateObject<ObjectType: ObservableObject>: DynamicProperty {
    public init(wrappedValue thunk: @autoclosure @escaping () -> ObjectType) { object = thunk() }
    private let object: ObjectType
    @MainActor public var wrappedValue: ObjectType { object }
}

extension View {
    public func id<ID: Hashable>(_ id: ID) -> some View { self }
}

// Added for the loading indicator over a RemoteImage (ProgressView, AnyView and
// overlay(alignment:content:) as SwiftUI.swiftinterface of the iOS 16.5 SDK has them).
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
public struct ProgressView<Label, CurrentValueLabel>: View where Label: View, CurrentValueLabel: View {
    @MainActor public var body: some View { EmptyView() }
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
extension ProgressView where CurrentValueLabel == EmptyView {
    public init() where Label == EmptyView {}
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, *)
extension ProgressView {
    public init<V>(value: V?, total: V = 1.0) where Label == EmptyView, CurrentValueLabel == EmptyView, V: BinaryFloatingPoint {}
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public struct AnyView: View {
    public init<V>(_ view: V) where V: View {}
    public var body: Never { fatalError() }
}

@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, *)
extension View {
    public func overlay<V>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> some View where V: View { self }
}
