import Warren

/// The `shout` operation: returns its text in upper case, after an optional delay.
///
/// Asynchronous: it awaits `Task.sleep`, which holds no thread while it waits, so a worker can keep many shouts
/// waiting with a narrow local queue. The task is cancelled when the job is, and `Task.sleep` then throws
/// `CancellationError`, which ends the job `cancelled`.
enum Shout {
    /// The operation type name producers use.
    static let type = "shout"

    /// The job's input: `{"text": "...", "delayMs": 500}`.
    struct Input: Codable, Sendable {
        var text: String
        /// Milliseconds to wait before answering. Default: none.
        var delayMs: Int?
    }

    /// The job's output: `{"text": "..."}`, upper-cased.
    struct Output: Codable, Sendable {
        var text: String
    }

    /// Waits `input.delayMs`, then upper-cases `input.text`.
    /// - Throws: `CancellationError` when the job is cancelled while it waits.
    static func run(_ input: Input, job: JobContext) async throws -> Output {
        if let delayMs = input.delayMs, delayMs > 0 {
            try await Task.sleep(for: .milliseconds(delayMs))
        }
        return Output(text: input.text.uppercased())
    }
}
