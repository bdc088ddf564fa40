import Warren

/// The `shout` operation: returns its text in upper case, after an optional delay.
///
/// Asynchronous: it awaits `Task.sleep`, which holds no thread while it waits, so a worker can keep many shouts
/// waiting with a narrow local queue. The task is cancelled when the job is, and `Task.sleep` then throws
/// `CancellationError`, which ends the job `cancelled`.
public enum Shout: OperationDefinition {
    /// The operation type name producers use.
    public static let type = "shout"

    /// The job's input: `{"text": "...", "delayMs": 500}`.
    public struct Input: Codable, Sendable {
        public var text: String
        /// Milliseconds to wait before answering. Default: none.
        public var delayMs: Int?

        public init(text: String, delayMs: Int? = nil) {
            self.text = text
            self.delayMs = delayMs
        }
    }

    /// The job's output: `{"text": "..."}`, upper-cased.
    public struct Output: Codable, Sendable, Equatable {
        public var text: String

        public init(text: String) { self.text = text }
    }

    /// Waits `input.delayMs`, then upper-cases `input.text`.
    /// - Throws: `CancellationError` when the job is cancelled while it waits.
    @Sendable public static func run(_ input: Input, job: JobContext) async throws -> Output {
        if let delayMs = input.delayMs, delayMs > 0 {
            try await Task.sleep(for: .milliseconds(delayMs))
        }
        return Output(text: input.text.uppercased())
    }
}
