import AMQP
import Foundation
import Warren

/// Reads job results on a thread and a connection of its own, and records when each one arrived.
///
/// Arrival instants are taken on that thread the moment librabbitmq hands over the message, so they do not
/// depend on what the publishing thread is doing. Results are told apart by their `correlation_id` property (the
/// job id, for Warren and the baseline alike), without decoding their bodies; progress reports that reach a reply
/// queue (their `type` says so) are skipped.
///
/// Thread safety: locked. The collector's thread owns the connection; the counters and arrivals it shares with
/// the caller's thread live behind `condition` (an `NSCondition`), hence `@unchecked Sendable`.
final class ResultCollector: @unchecked Sendable {
    /// Where results come from.
    enum Source: Sendable {
        /// An existing queue, consumed without acknowledgements.
        case queue(String)
        /// Warren's `warren.results` exchange, through a queue of the collector's own bound to it with `#` and
        /// consumed without acknowledgements: how a client that watches every result published there receives
        /// them (the baseline's ``BaselineVariant/resultsExchange``).
        case resultsExchange
    }

    /// One result as it arrived.
    struct Arrival: Sendable {
        let jobID: String
        /// The message's `type` property: `warren.result.STATUS` for Warren.
        let type: String?
        let body: [UInt8]
        let instant: ContinuousClock.Instant
    }

    /// When the first and the last expected result arrived, and how many did.
    struct Span: Sendable {
        let first: ContinuousClock.Instant
        let last: ContinuousClock.Instant
        let count: Int
    }

    private let condition = NSCondition()
    private let wakeUp = WakeUpSignal()
    private let source: Source
    private let prefix: String
    private let expected: Int?
    private let keepsArrivals: Bool
    private var count = 0
    private var first: ContinuousClock.Instant?
    private var last: ContinuousClock.Instant?
    private var arrivals: [String: Arrival] = [:]
    private var stopping = false
    private var thread: BackgroundThread<Void>!

    /// Connects, starts consuming on the collector's thread and returns once it consumes.
    /// - Parameters:
    ///   - prefix: Only results whose job id starts with it count.
    ///   - expected: With a count, the collector stops by itself once that many arrived.
    ///   - keepsArrivals: Keep each arrival for ``arrival(of:timeout:)`` (one job at a time); otherwise only count.
    init(
        broker: AMQPConfiguration, source: Source, prefix: String, expected: Int? = nil, keepsArrivals: Bool = false
    ) throws {
        self.source = source
        self.prefix = prefix
        self.expected = expected
        self.keepsArrivals = keepsArrivals
        let ready = DispatchSemaphore(value: 0)
        let setup = SetupOutcome()
        thread = BackgroundThread(name: "warren.bench.results") { [self] in
            let connection: AMQPConnection
            do {
                connection = try Self.consume(source, broker: broker)
            } catch {
                setup.error = error
                ready.signal()
                throw error
            }
            ready.signal()
            defer { connection.close() }
            try collect(from: connection)
        }
        ready.wait()
        if let error = setup.error { throw error }
    }

    private static func consume(_ source: Source, broker: AMQPConfiguration) throws -> AMQPConnection {
        var broker = broker
        broker.connectionName = "warren bench results"
        let connection = try AMQPConnection(configuration: broker)
        try connection.openChannel(1)
        switch source {
        case .queue(let queue):
            try connection.consume(queue, noAck: true, channel: 1)
        case .resultsExchange:
            try Topology.declareResults(on: connection, channel: 1)
            let queue = try connection.declareQueue(
                "", durable: false, exclusive: true, autoDelete: true, channel: 1
            ).name
            try connection.bindQueue(queue, to: Topology.resultsExchange, routingKey: "#", channel: 1)
            try connection.consume(queue, noAck: true, channel: 1)
        }
        return connection
    }

    private func collect(from connection: AMQPConnection) throws {
        let pump = AMQPEventPump(connection)
        var done = false
        pump.route(1) { [self] delivery in
            let instant = ContinuousClock.now
            guard !done, let id = delivery.properties.correlationID, id.hasPrefix(prefix),
                delivery.properties.type != ProgressMessage.messageType
            else { return }
            done = condition.withLock {
                count += 1
                if first == nil { first = instant }
                last = instant
                if keepsArrivals {
                    arrivals[id] = Arrival(
                        jobID: id, type: delivery.properties.type, body: delivery.body, instant: instant)
                }
                condition.broadcast()
                return count >= expected ?? .max
            }
        }
        while true {
            try pump.dispatch()
            if done || condition.withLock({ stopping }) { return }
            connection.waitForActivity(wakeUp: wakeUp, timeout: .seconds(1))
        }
    }

    /// Waits until job `jobID`'s result arrived and returns it.
    /// - Throws: ``BenchError`` when it did not arrive within `timeout`.
    func arrival(of jobID: String, timeout: Duration) throws -> Arrival {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        return try condition.withLock {
            while true {
                if let arrival = arrivals.removeValue(forKey: jobID) { return arrival }
                guard condition.wait(until: deadline) else {
                    throw BenchError("no result for job \(jobID) within \(timeout): is the worker running?")
                }
            }
        }
    }

    /// Waits until the expected number of results arrived.
    /// - Throws: ``BenchError`` when they did not all arrive within `timeout`.
    func waitForAll(timeout: Duration) throws -> Span {
        let target = expected ?? 0
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        let span = condition.withLock { () -> Span? in
            while count < target, condition.wait(until: deadline) {}
            guard count >= target, let first, let last else { return nil }
            return Span(first: first, last: last, count: count)
        }
        guard let span else {
            let arrived = condition.withLock { count }
            stop()
            throw BenchError("only \(arrived) of \(target) results arrived within \(timeout): did the worker stall?")
        }
        try thread.join()
        return span
    }

    /// Stops collecting and closes the connection.
    func stop() {
        condition.withLock { stopping = true }
        wakeUp.signal()
        _ = try? thread.join()
    }
}

/// The setup error the collector's thread hands to the thread that waits for it.
///
/// Thread safety: written before a semaphore signal, read after the matching wait; hence `@unchecked Sendable`.
private final class SetupOutcome: @unchecked Sendable {
    var error: (any Error)?
}
