/// Durations as the figures report them.
extension Duration {
    /// The duration in milliseconds, as a `Double`.
    var milliseconds: Double {
        let parts = components
        return Double(parts.seconds) * 1000 + Double(parts.attoseconds) / 1e15
    }

    /// The duration in seconds, as a `Double`.
    var seconds: Double { milliseconds / 1000 }
}
