import Foundation

/// Runs a closure on a thread of its own and hands back what it returned: the way to give a confined
/// `AMQPConnection` a thread that owns it for the connection's whole life.
///
/// Thread safety: `result` is written once by the thread before it signals `done`, and read only after `done` was
/// waited for, so the semaphore orders the two accesses; hence `@unchecked Sendable`.
final class BackgroundThread<Value: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<Value, any Error>?

    /// Starts `body` on a new thread named `name`.
    init(name: String, _ body: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            result = Result { try body() }
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits until the thread's closure returned, and returns its value or rethrows its error.
    func join() throws -> Value {
        done.wait()
        done.signal()  // later joins return at once
        return try result!.get()
    }
}
