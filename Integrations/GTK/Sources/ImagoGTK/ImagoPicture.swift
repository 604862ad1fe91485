import Foundation
import Imago
import ImagoUI

/// The ImagoPicture widget type, registered with the GObject type system: a GTK 4
/// widget that GtkBuilder, C and every language with GObject bindings can make and
/// drive through its properties ("url", "content-fit", "alternative-text",
/// "placeholder-icon-name", "placeholder-paintable"). `ImageView` is its Swift face.
public enum ImagoPicture {
    /// Registers the type and installs its behaviour; returns the type. Call it
    /// before GtkBuilder parses a `.ui` file naming `ImagoPicture` (making an
    /// `ImageView` calls it too). Idempotent; main thread only.
    @MainActor @discardableResult
    public static func register() -> GType {
        attachMainActorToGLib()
        var behaviour = ImagoPictureBehaviour(
            init: { instance in
                // Pointers GTK hands over on the main thread, used there.
                guard let instance else { return nil }
                nonisolated(unsafe) let picture = instance
                nonisolated(unsafe) var state: UnsafeMutableRawPointer?
                MainActor.assumeIsolated { state = Unmanaged.passRetained(PictureState(picture)).toOpaque() }
                return state
            },
            dispose: { _, state in
                guard let state else { return }
                MainActor.assumeIsolated { Unmanaged<PictureState>.fromOpaque(state).takeRetainedValue().detach() }
            },
            property_changed: { state, property in
                MainActor.assumeIsolated { PictureState.of(state)?.propertyChanged(property) }
            },
            measure: { state, orientation, forSize, minimum, natural in
                MainActor.assumeIsolated {
                    PictureState.of(state)?.measure(orientation, forSize: forSize, minimum: minimum, natural: natural)
                }
            },
            size_allocate: { state, width, height in
                MainActor.assumeIsolated { PictureState.of(state)?.allocate(width: width, height: height) }
            },
            snapshot: { state, snapshot in
                guard let snapshot else { return }
                nonisolated(unsafe) let target = snapshot
                MainActor.assumeIsolated { PictureState.of(state)?.snapshot(target) }
            },
            mapping_changed: { state, mapped in
                MainActor.assumeIsolated { PictureState.of(state)?.mappingChanged(mapped != 0) }
            })
        return imago_picture_install(&behaviour)
    }
}

/// What GTK's callbacks hold: the state, weakly, so a callback outliving it calls
/// nothing.
///
/// `@unchecked Sendable`: GTK calls back on the main thread only, where it is read.
final class WeakPictureState: @unchecked Sendable {
    weak var state: PictureState?
    init(_ state: PictureState) { self.state = state }
}
