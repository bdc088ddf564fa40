import Foundation

/// Runs a broker loop on a thread of its own for async callers, as ``Worker/run()`` and ``Scheduler/run()`` do.
///
/// Thread safety: stateless; `body` runs on the new thread, `onCancel` on whichever cancels the awaiting task.
enum BrokerThread {
    /// Runs `body` on a new thread named `name` until it returns, and calls `onCancel` if the awaiting task is
    /// cancelled meanwhile (or was already).
    static func run(
        named name: String, _ body: @escaping @Sendable () throws -> Void, onCancel: @escaping @Sendable () -> Void
    ) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let thread = Thread { continuation.resume(with: Result { try body() }) }
                thread.name = name
                thread.start()
            }
        } onCancel: {
            onCancel()
        }
    }
}
