import Foundation

extension Duration {
    /// The duration in seconds, as metrics report it.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
