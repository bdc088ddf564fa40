import Foundation
import Synchronization

/// A producer for any thread or task: it keeps one ``Producer`` on a thread of its own and runs each call there, in
/// the order the calls arrive, handing each outcome back to its caller, as TN2109 confines a library that is not
/// thread safe to one thread and passes work to it. Use one per process (an app server's request handlers, say)
/// instead of one ``Producer`` per thread; no cooperative thread waits for the broker.
///
/// ```swift
/// let jobs = try SharedProducer(url: "amqp://guest:guest@localhost/%2F")
/// // In any task, as often as needed:
/// let job = try await jobs.enqueue(JobRequest(type: "sum", input: ["numbers": [1, 2, 3]]))
/// ```
///
/// It connects on its first call. A call that fails because the broker was lost (``WarrenError/Code/broker``) or
/// did not confirm in time (``WarrenError/Code/timeout``) throws, and is not tried again: it may have published.
/// The next call connects anew.
///
/// Thread safety: locked hand-off. Calls queue behind a lock; the ``Producer`` is confined to the thread this
/// object starts, which ends once ``close()`` was called (or the object is released) and the queued calls ran.
public final class SharedProducer: Sendable {
    private let line: CallLine

    /// Starts the producer's thread; the connection waits for the first call.
    /// - Parameters:
    ///   - url: `amqp://user:password@host:port/vhost`; several, separated by commas, are tried in turn.
    ///   - sequences: Where sequence numbers come from. Default: the host-wide ``SequenceStore``.
    ///   - priorityQueues: Whether job queues this producer has to create are priority queues.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a malformed URL.
    public init(url: String, sequences: SequenceStore = SequenceStore(), priorityQueues: Bool = false) throws {
        _ = try BrokerAddresses(url, connectionName: "")
        line = CallLine { try Producer(url: url, sequences: sequences, priorityQueues: priorityQueues) }
        let thread = Thread { [line] in line.serve() }
        thread.name = "warren shared producer"
        thread.start()
    }

    deinit {
        line.close()
    }

    /// Publishes a job and returns its descriptor once the broker confirmed it (``Producer/enqueue(_:watch:)``).
    public func enqueue(_ request: JobRequest) async throws -> OperationDescriptor {
        try await withProducer { try $0.enqueue(request) }
    }

    /// Publishes jobs and returns their descriptors once the broker confirmed all of them
    /// (``Producer/enqueue(_:watch:)-([JobRequest],_)``).
    public func enqueue(_ requests: [JobRequest]) async throws -> [OperationDescriptor] {
        try await withProducer { try $0.enqueue(requests) }
    }

    /// Cancels jobs wherever they are (``Producer/cancel(jobIDs:)``).
    public func cancel(jobIDs: [String]) async throws {
        try await withProducer { try $0.cancel(jobIDs: jobIDs) }
    }

    /// Cancels every job of `key` whose sequence is below `sequence` (``Producer/supersede(key:before:)``).
    public func supersede(key: String, before sequence: UInt64) async throws {
        try await withProducer { try $0.supersede(key: key, before: sequence) }
    }

    /// Runs `body` with the producer, on its thread, after the calls queued before it. Anything a ``Producer`` does
    /// is available this way; a call that waits (``Producer/waitForResult(of:timeout:progress:)``) holds the
    /// thread, and every call queued behind it waits too.
    /// - Throws: What `body` throws; ``WarrenError`` (`broker`) when the producer cannot connect,
    ///   (`invalidConfiguration`) once ``close()`` was called.
    public func withProducer<T: Sendable>(_ body: @escaping @Sendable (Producer) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            line.add { connection in
                do {
                    continuation.resume(returning: try body(try connection.get()))
                    return true
                } catch let error as WarrenError where error.code == .broker || error.code == .timeout {
                    continuation.resume(throwing: error)
                    return false
                } catch {
                    continuation.resume(throwing: error)
                    return true
                }
            } closed: {
                continuation.resume(throwing: WarrenError(.invalidConfiguration, "the shared producer was closed"))
            }
        }
    }

    /// Lets the calls already queued run, then closes the connection and ends the thread; calls made afterwards
    /// throw.
    public func close() {
        line.close()
    }
}

/// The calls waiting for a ``SharedProducer``'s thread, and that thread's loop.
///
/// Thread safety: locked. `add` and `close` are called from any thread; `serve` runs on the producer's thread, the
/// only one that touches the ``Producer``.
private final class CallLine: Sendable {
    /// Runs on the producer's thread with the producer, or the reason there is none; returns whether the producer
    /// can be used for the next call.
    typealias Call = @Sendable (Result<Producer, any Error>) -> Bool

    private struct State {
        var calls: [Call] = []
        var isClosed = false
    }

    private let state = Mutex(State())
    /// Signalled once per call added, and once by `close`.
    private let arrivals = DispatchSemaphore(value: 0)
    private let connect: @Sendable () throws -> Producer

    init(connect: @escaping @Sendable () throws -> Producer) {
        self.connect = connect
    }

    /// Queues `call`, or runs `closed` at once if the line is closed.
    func add(_ call: @escaping Call, closed: () -> Void) {
        let added = state.withLock { state in
            guard !state.isClosed else { return false }
            state.calls.append(call)
            return true
        }
        guard added else { return closed() }
        arrivals.signal()
    }

    func close() {
        let closes = state.withLock { state in
            defer { state.isClosed = true }
            return !state.isClosed
        }
        if closes { arrivals.signal() }
    }

    /// Runs the calls in turn until the line is closed and empty, connecting before a call when not connected, and
    /// dropping a producer whose connection a call found lost.
    func serve() {
        var producer: Producer?
        while let call = nextCall() {
            let connection: Result<Producer, any Error> = producer.map { .success($0) } ?? Result { try connect() }
            producer = try? connection.get()
            if !call(connection) {
                producer?.close()
                producer = nil
            }
        }
        producer?.close()
    }

    /// Waits for the next call; `nil` once the line is closed and empty.
    private func nextCall() -> Call? {
        while true {
            arrivals.wait()
            let (call, isClosed) = state.withLock { state in
                (state.calls.isEmpty ? nil : state.calls.removeFirst(), state.isClosed)
            }
            if let call { return call }
            if isClosed { return nil }
        }
    }
}
