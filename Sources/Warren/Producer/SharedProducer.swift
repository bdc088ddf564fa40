import AMQP
import Foundation
import Synchronization

/// A producer for any thread or task: it keeps one connection on a thread of its own and runs each call there, in
/// the order the calls arrive, handing each outcome back to its caller, as TN2109 confines a library that is not
/// thread safe to one thread and passes work to it. Use one per process (an app server's request handlers, say)
/// instead of one connection per thread; no cooperative thread waits for the broker.
///
/// ```swift
/// let jobs = try SharedProducer(url: "amqp://guest:guest@localhost/%2F")
/// // In any task, as often as needed:
/// let job = try await jobs.enqueue(JobRequest(type: "sum", input: ["numbers": [1, 2, 3]]), watch: true)
/// let result = try await jobs.result(of: job.id, timeout: .seconds(30))
/// ```
///
/// It connects on its first call. A call that fails because the broker was lost (``WarrenError/Code/broker``) or
/// did not confirm in time (``WarrenError/Code/timeout``) throws, and is not tried again: it may have published.
/// The next call connects anew.
///
/// Thread safety: locked hand-off. Calls queue in a `Mailbox` whose wake-up signal the thread this object starts
/// watches beside the broker's socket; the connection is confined to that thread, which ends once ``close()`` was
/// called (or the object is released) and the calls queued before it ran.
public final class SharedProducer: Sendable {
    private let line: CallLine

    /// Starts the producer's thread; the connection waits for the first call.
    /// - Parameters:
    ///   - url: `amqp://user:password@host:port/vhost`; several, separated by commas, are tried in turn.
    ///   - sequences: Where sequence numbers come from. Default: the host-wide ``SequenceStore``.
    ///   - priorityQueues: Whether job queues this producer has to create are priority queues.
    ///   - quorumQueues: Whether job queues this producer has to create are quorum queues; not with
    ///     `priorityQueues`.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a malformed URL, or both kinds of queue.
    public init(
        url: String, sequences: SequenceStore = SequenceStore(), priorityQueues: Bool = false,
        quorumQueues: Bool = false
    ) throws {
        _ = try BrokerAddresses(url, connectionName: "")
        if let problem = Topology.problem(creatingPriorityQueues: priorityQueues, quorumQueues: quorumQueues) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        line = CallLine {
            try Producer(url: url, sequences: sequences, priorityQueues: priorityQueues, quorumQueues: quorumQueues)
        }
        let thread = Thread { [line] in line.serve() }
        thread.name = "warren shared producer"
        thread.start()
    }

    deinit {
        line.close()
    }

    /// Publishes a job and returns its descriptor once the broker confirmed it
    /// (``enqueue(_:watch:)-([JobRequest],_)`` for one).
    /// - Parameters:
    ///   - request: The job.
    ///   - watch: Send its result to this producer, for ``result(of:timeout:)``.
    public func enqueue(_ request: JobRequest, watch: Bool = false) async throws -> OperationDescriptor {
        try await withProducer { try $0.enqueue(request, watch: watch) }
    }

    /// Publishes jobs and returns their descriptors once the broker confirmed all of them
    /// (all of them, or none when the call fails).
    /// - Parameters:
    ///   - requests: The jobs.
    ///   - watch: Send their results to this producer, for ``result(of:timeout:)``.
    public func enqueue(_ requests: [JobRequest], watch: Bool = false) async throws -> [OperationDescriptor] {
        try await withProducer { try $0.enqueue(requests, watch: watch) }
    }

    /// The result of a job this producer enqueued with `watch: true`, once it arrives. Waiting holds no thread:
    /// the producer's thread reads results between calls. Cancelling the waiting task ends the wait at once.
    /// - Throws: ``WarrenError`` (`timeout`) when no result came within `timeout`; (`broker`) when the connection
    ///   was lost since the job was enqueued, since the result then goes to a reply queue that is gone (read it from
    ///   the `warren.results` stream with ``ResultReader``); (`invalidConfiguration`) at once for a job this producer
    ///   did not enqueue with `watch: true` or whose result it handed out already, and once ``close()`` was called;
    ///   `CancellationError` when the task was cancelled.
    public func result(of jobID: String, timeout: Duration) async throws -> JobResult {
        let ticket = CancellationTicket()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let waiter = Waiter(jobID: jobID, timeout: timeout, ticket: ticket, continuation: continuation)
                line.add(.wait(waiter)) { continuation.resume(throwing: CallLine.closedError) }
            }
        } onCancel: {
            ticket.cancel()
            line.wake()
        }
    }

    /// Cancels jobs wherever they are: executing, waiting in a worker, or still in the broker.
    public func cancel(jobIDs: [String]) async throws {
        try await withProducer { try $0.cancel(jobIDs: jobIDs) }
    }

    /// Cancels every job of `key` whose sequence is below `sequence`.
    public func supersede(key: String, before sequence: UInt64) async throws {
        try await withProducer { try $0.supersede(key: key, before: sequence) }
    }

    /// Runs `body` with the producer, on its thread, after the calls queued before it. Anything a ``Producer`` does
    /// is available this way; a call that blocks (``Producer/waitForResult(of:timeout:progress:)``) holds the
    /// thread, and every call queued behind it waits too: prefer ``result(of:timeout:)``. A call whose task is
    /// cancelled before its turn does not run, nor connect; once it runs, it runs to its end.
    /// - Throws: What `body` throws; ``WarrenError`` (`broker`) when the producer cannot connect,
    ///   (`invalidConfiguration`) once ``close()`` was called; `CancellationError` when the task was cancelled
    ///   before its turn.
    package func withProducer<T: Sendable>(_ body: @escaping @Sendable (Producer) throws -> T) async throws -> T {
        let ticket = CancellationTicket()
        return try await withTaskCancellationHandler {
            try await call(body, ticket: ticket)
        } onCancel: {
            ticket.cancel()
        }
    }

    private func call<T: Sendable>(
        _ body: @escaping @Sendable (Producer) throws -> T, ticket: CancellationTicket
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            line.add(
                .call { connection in
                    do {
                        guard !ticket.isCancelled else { throw CancellationError() }
                        continuation.resume(returning: try body(try connection()))
                        return true
                    } catch let error as WarrenError where error.code == .broker || error.code == .timeout {
                        continuation.resume(throwing: error)
                        return false
                    } catch {
                        continuation.resume(throwing: error)
                        return true
                    }
                }
            ) { continuation.resume(throwing: CallLine.closedError) }
        }
    }

    /// Lets the calls already queued run, then closes the connection and ends the thread; calls made afterwards
    /// throw, and so do waits for results still open.
    public func close() {
        line.close()
    }
}

/// Whether the task behind a call or a wait was cancelled: set from the task's cancellation handler, read on the
/// producer's thread.
///
/// Thread safety: locked (a `Mutex`).
private final class CancellationTicket: Sendable {
    private let cancelled = Mutex(false)

    var isCancelled: Bool { cancelled.withLock { $0 } }

    func cancel() {
        cancelled.withLock { $0 = true }
    }
}

/// A task waiting for the result of a watched job.
///
/// Thread safety: immutable; its continuation is resumed once, on the producer's thread.
private struct Waiter: Sendable {
    let jobID: String
    let deadline: ContinuousClock.Instant
    let timeout: Duration
    let ticket: CancellationTicket
    let continuation: CheckedContinuation<JobResult, any Error>

    init(
        jobID: String, timeout: Duration, ticket: CancellationTicket,
        continuation: CheckedContinuation<JobResult, any Error>
    ) {
        self.jobID = jobID
        self.deadline = .now + timeout
        self.timeout = timeout
        self.ticket = ticket
        self.continuation = continuation
    }
}

/// The calls waiting for a ``SharedProducer``'s thread, and that thread's loop.
///
/// Thread safety: locked. `add` and `close` are called from any thread; `serve` runs on the producer's thread, the
/// only one that touches the ``Producer``.
private final class CallLine: Sendable {
    /// Runs on the producer's thread with a function that gives the producer, connecting first if it is not
    /// connected (a call that does not run, its task cancelled, does not connect); returns whether the producer can
    /// be used for the next call.
    typealias Call = @Sendable (_ connection: () throws -> Producer) -> Bool

    enum Message: Sendable {
        case call(Call)
        case wait(Waiter)
        /// A waiting task was cancelled.
        case wake
        case close
    }

    static let closedError = WarrenError(.invalidConfiguration, "the shared producer was closed")

    private let mailbox = Mailbox<Message>()
    /// Whether ``close()`` was called: nothing is posted after its `.close`.
    private let isClosed = Mutex(false)
    private let connect: @Sendable () throws -> Producer

    init(connect: @escaping @Sendable () throws -> Producer) {
        self.connect = connect
    }

    /// Posts `message`, or runs `closed` at once if the line is closed.
    func add(_ message: Message, closed: () -> Void) {
        let added = isClosed.withLock { isClosed in
            if !isClosed { mailbox.post(message) }
            return !isClosed
        }
        if !added { closed() }
    }

    /// Has the thread look at its waiters again.
    func wake() {
        add(.wake) {}
    }

    func close() {
        isClosed.withLock { isClosed in
            if !isClosed { mailbox.post(.close) }
            isClosed = true
        }
    }

    /// Runs the calls in turn, connecting before a call when not connected and dropping a producer whose connection
    /// a call found lost, and reads results for the tasks that wait for them in between; until closed.
    func serve() {
        var producer: Producer?
        var waiters: [Waiter] = []
        /// Jobs watched on connections since lost, whose results can no longer come to this producer.
        var lost: Set<String> = []
        func drop() {
            guard let dropped = producer else { return }
            dropped.close()
            producer = nil
            lost.formUnion(dropped.watchedJobIDs)
            while lost.count > Self.maxLost { lost.removeFirst() }
        }
        var closing = false
        while !closing {
            for message in mailbox.drain() {
                switch message {
                case .call(let call):
                    let usable = call {
                        if let producer { return producer }
                        let connected = try connect()
                        producer = connected
                        return connected
                    }
                    if !usable { drop() }
                case .wait(let waiter): waiters.append(waiter)
                case .wake: break
                case .close: closing = true
                }
            }
            Self.answer(&waiters, from: producer, lost: &lost)
            guard !closing else { break }
            mailbox.sleep {
                guard let live = producer, let first = waiters.map(\.deadline).min() else {
                    return mailbox.wakeUp.wait(timeout: .seconds(3600))
                }
                do {
                    try live.readReplies(waitingUpTo: min(first - .now, .seconds(1)), wakeUp: mailbox.wakeUp)
                } catch {
                    drop()
                }
            }
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Self.closedError) }
        producer?.close()
    }

    /// How many jobs watched on lost connections are remembered, to tell their waiters why no result comes.
    private static let maxLost = 100_000

    /// Resumes the waiters whose task was cancelled, whose result arrived, whose time is up, or whose result
    /// cannot come: its job was watched on a connection since lost, or is not watched at all.
    private static func answer(_ waiters: inout [Waiter], from producer: Producer?, lost: inout Set<String>) {
        waiters.removeAll { waiter in
            if waiter.ticket.isCancelled {
                waiter.continuation.resume(throwing: CancellationError())
            } else if let result = producer?.takeResult(of: waiter.jobID) {
                waiter.continuation.resume(returning: result)
            } else if lost.remove(waiter.jobID) != nil {
                waiter.continuation.resume(
                    throwing: WarrenError(
                        .broker,
                        "the connection to the broker was lost before the result of job \(waiter.jobID) came; "
                            + "it is stored in the warren.results stream"))
            } else if producer?.isWatching(waiter.jobID) != true {
                waiter.continuation.resume(throwing: ResultWatcher.notWatched([waiter.jobID]))
            } else if waiter.deadline <= .now {
                waiter.continuation.resume(
                    throwing: WarrenError(.timeout, "no result for job \(waiter.jobID) within \(waiter.timeout)"))
            } else {
                return false
            }
            return true
        }
    }
}
