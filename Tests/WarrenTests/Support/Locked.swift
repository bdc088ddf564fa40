import Synchronization

/// A value behind a `Mutex`, in a class so escaping closures (threads, tasks, reports) can share it.
///
/// Thread safety: locked.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    var value: Value {
        mutex.withLock { $0 }
    }

    @discardableResult
    func withLock<Result: Sendable>(_ body: (inout sending Value) -> sending Result) -> sending Result {
        mutex.withLock(body)
    }
}
