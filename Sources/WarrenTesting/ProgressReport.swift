/// One progress report of a job: how far it came, and what it said.
///
/// Thread safety: immutable.
public struct ProgressReport: Sendable, Hashable {
    /// From 0 to 1.
    public var fraction: Double
    /// The job's short message, if it gave one.
    public var message: String?

    /// A report of `fraction`, with `message`.
    public init(fraction: Double, message: String? = nil) {
        self.fraction = fraction
        self.message = message
    }
}
