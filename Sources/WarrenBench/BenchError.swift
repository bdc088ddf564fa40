/// Why a benchmark run could not finish: a worker that would not start, a result that never came.
///
/// The figures of a failed run are not reported: a benchmark that lost jobs measures nothing.
public struct BenchError: Error, Sendable, CustomStringConvertible {
    /// A sentence a person can act on.
    public var message: String

    /// An error saying `message`.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
