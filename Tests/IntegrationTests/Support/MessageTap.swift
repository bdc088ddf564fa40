import AMQP
import Foundation
import Testing
import Warren

/// A private queue, collecting every message that reaches it while it lives: bound to an exchange (results from
/// `warren.results`, dead letters from `warren.dead`), or named by jobs as their reply queue.
///
/// Thread safety: confined to the test's thread, like the connection it owns.
final class MessageTap {
    let connection: AMQPConnection
    let queue: String
    private(set) var messages: [Delivery] = []

    /// A tap bound to `exchange` with `routingKey`, or bound nowhere when `exchange` is `nil`.
    init(exchange: String?, routingKey: String = "#") throws {
        connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
        try connection.openChannel(1)
        try Topology.declareResults(on: connection, channel: 1)
        try Topology.declareDeadLetters(on: connection, channel: 1)
        queue = try connection.declareQueue("", durable: false, exclusive: true, autoDelete: true, channel: 1).name
        if let exchange { try connection.bindQueue(queue, to: exchange, routingKey: routingKey, channel: 1) }
        try connection.consume(queue, noAck: true, channel: 1)
    }

    /// A tap on every result published to the results exchange.
    static func results() throws -> MessageTap { try MessageTap(exchange: Topology.resultsExchange) }

    /// A queue for jobs to name as their reply queue (`JobRequest.replyTo`).
    static func replyQueue() throws -> MessageTap { try MessageTap(exchange: nil) }

    /// A tap on every dead letter.
    static func deadLetters() throws -> MessageTap { try MessageTap(exchange: Topology.deadExchange) }

    deinit { connection.close() }

    /// Reads what arrived, waiting up to `timeout` until `done` holds.
    func read(timeout: Duration, until done: ([Delivery]) -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while !done(messages) {
            if let event = try connection.nextEvent() {
                if case .delivery(let delivery) = event { messages.append(delivery) }
                continue
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            connection.waitForActivity(wakeUp: nil, timeout: min(left, .milliseconds(200)))
        }
    }

    /// The results that arrived for `jobID`.
    func results(for jobID: String) -> [JobResult] {
        messages.compactMap { try? JobResult.decode($0.body) }.filter { $0.jobID == jobID }
    }

    /// Waits until every job in `jobIDs` has a result, then returns the first result of each, in `jobIDs` order.
    /// Records an issue for each job without one.
    func waitForResults(_ jobIDs: [String], timeout: Duration = .seconds(60)) throws -> [JobResult] {
        // Each message is decoded once, however many arrive.
        var first: [String: JobResult] = [:]
        var decoded = 0
        try read(timeout: timeout) { messages in
            for message in messages[decoded...] {
                if let result = try? JobResult.decode(message.body), first[result.jobID] == nil {
                    first[result.jobID] = result
                }
            }
            decoded = messages.count
            return jobIDs.allSatisfy { first[$0] != nil }
        }
        for id in jobIDs where first[id] == nil {
            Issue.record("no result for job \(id) within \(timeout)")
        }
        return jobIDs.compactMap { first[$0] }
    }

    /// Waits for the result of one job.
    func waitForResult(_ jobID: String, timeout: Duration = .seconds(60)) throws -> JobResult {
        try #require(try waitForResults([jobID], timeout: timeout).first)
    }

    /// Keeps reading for `duration`, to catch messages that should not come (a second result).
    func settle(for duration: Duration = .milliseconds(500)) throws {
        try read(timeout: duration) { _ in false }
    }

    /// Results in arrival order.
    var arrivedResults: [JobResult] {
        messages.compactMap { try? JobResult.decode($0.body) }
    }
}

/// Broker-side facts the tests check.
enum BrokerProbe {
    /// Ready and unacknowledged messages of `queue`.
    static func depth(of queue: String) throws -> UInt32 {
        let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
        defer { connection.close() }
        try connection.openChannel(1)
        return try connection.declareQueue(queue, passive: true, channel: 1).messageCount
    }

    /// Waits until `queue` holds `count` ready messages, then checks that it stays there for a while: a worker
    /// taking one job too many does so within milliseconds.
    static func expectReady(
        in queue: String, _ count: UInt32, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try depth(of: queue) != count, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 0.5)
        let depth = try depth(of: queue)
        #expect(depth == count, "\(comment): \(depth) ready", sourceLocation: sourceLocation)
    }

    /// Consumers of `queue`.
    static func consumers(of queue: String) throws -> UInt32 {
        let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
        defer { connection.close() }
        try connection.openChannel(1)
        return try connection.declareQueue(queue, passive: true, channel: 1).consumerCount
    }

    /// Whether durable queue `queue` exists with exactly `arguments`: the broker accepts a declaration that
    /// repeats them, and refuses one that differs (406 `PRECONDITION_FAILED`).
    static func isDeclared(_ queue: String, with arguments: AMQPTable) throws -> Bool {
        let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
        defer { connection.close() }
        try connection.openChannel(1)
        do {
            _ = try connection.declareQueue(queue, arguments: arguments, channel: 1)
            return true
        } catch let error as AMQPError where error.replyCode == 406 {
            return false
        }
    }

    /// Takes the copies of the dead letters of jobs `ids` out of ``Topology/deadWatchQueue``, where the broker put
    /// them if the queue existed: a test that makes the broker dead-letter jobs without wanting their results, left
    /// to a later test's worker, would see that worker publish failed results it did not ask for. Waits up to 5 s for
    /// copies not there yet; the copies of other letters go back as the connection closes.
    static func discardDeadLetterCopies(of ids: Set<String>) {
        guard let url = try? TestEnvironment.brokerURL,
            let connection = try? AMQPConnection(configuration: AMQPConfiguration(url: url))
        else { return }
        defer { connection.close() }
        guard (try? connection.openChannel(1)) != nil,
            (try? connection.declareQueue(Topology.deadWatchQueue, passive: true, channel: 1)) != nil
        else { return }
        var left = ids
        let deadline = ContinuousClock.now + .seconds(5)
        while !left.isEmpty, ContinuousClock.now < deadline {
            guard let copy = try? connection.get(Topology.deadWatchQueue, channel: 1) else {
                Thread.sleep(forTimeInterval: 0.05)
                continue
            }
            if let id = copy.properties.messageID, left.remove(id) != nil {
                try? connection.ack(copy.deliveryTag, channel: 1)
            }
        }
    }

    /// Deletes a test's queue.
    static func delete(_ queue: String) {
        guard let url = try? TestEnvironment.brokerURL,
            let connection = try? AMQPConnection(configuration: AMQPConfiguration(url: url))
        else { return }
        defer { connection.close() }
        try? connection.openChannel(1)
        _ = try? connection.deleteQueue(queue, channel: 1)
    }
}
