import AMQP
import Foundation

/// Removes the jobs waiting in a job queue, as `warren purge` does, so that nothing waits forever on them.
///
/// ```swift
/// let purge = try QueuePurge(url: "amqp://guest:guest@localhost:5672/%2F")
/// defer { purge.close() }
/// let report = try purge.purge("emails")
/// print("\(report.cancelled.count) jobs cancelled")
/// ```
///
/// Each job ends as a worker ends a cancelled job: its unique lock is released, then its `cancelled` result (reason
/// `purged`) goes to its reply queue or the results exchange, and to the `warren.results` stream. The job leaves
/// the queue once the broker confirmed both. A message that is no valid job descriptor is dead-lettered with the
/// reason a worker would give, and gets a `failed` result when it names a job id.
///
/// A purge takes the jobs the queue holds as it starts, and those of its delay queues: scheduled jobs and retries.
/// Jobs that arrive later stay. Jobs a worker holds, prefetched or running, are not in the queue: `warren cancel`
/// reaches them.
///
/// Thread safety: confined, like ``DeadLetterQueue``: use it from the thread that created it.
public final class QueuePurge {
    static let channel: UInt16 = 1
    /// The channel of unique locks: the broker closes it when a lock's queue is gone.
    static let lockChannel: UInt16 = 2
    /// Messages taken before their results are confirmed and they are acknowledged.
    static let chunk = 500
    /// The largest stream message of results it publishes.
    static let maxBatchBytes = 1 << 20
    /// The `workerId` of the results it publishes.
    public static let workerID =
        "purge-\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"

    let connection: AMQPConnection
    /// The channel's publishes and their confirms.
    private let confirms: ConfirmChannel<Void>
    /// Routes the confirms to it.
    private let pump: AMQPEventPump
    private var lockChannelOpen = false
    /// Reads any job a worker would read, whatever limits the workers set.
    private let decoder = JobDecoder(
        maxMessageBytes: Int(Int32.max), maxNestingDepth: JobDecoder.maxNestingDepths.upperBound,
        maxDependencies: .max)

    /// How many jobs a purge of a queue would take.
    public struct Count: Sendable, Equatable {
        /// Jobs waiting in the queue itself.
        public var waiting: Int
        /// Jobs waiting in its delay queues: scheduled for later, or retries.
        public var delayed: Int
    }

    /// What ``purge(_:)`` did.
    public struct Report: Sendable {
        /// The jobs that ended `cancelled`, reason `purged`: their ids.
        public var cancelled: [String] = []
        /// Messages that were no valid job descriptor, dead-lettered with this reason (a `JobError` code); the job
        /// id where they name one.
        public var deadLettered: [(jobID: String?, reason: String)] = []
        /// Messages left in their queue because the broker refused their result or dead letter (`basic.nack`).
        public var refused = 0
    }

    /// Connects, and declares the results exchange and stream and the dead-letter queue where they are missing.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL, `broker` when the connection fails or the
    ///   broker refuses a declaration).
    public init(url: String) throws {
        connection = try BrokerAddresses(url, connectionName: "warren purge").connect()
        confirms = ConfirmChannel(Self.channel, on: connection)
        pump = AMQPEventPump(connection)
        pump.route(Self.channel, to: confirms)
        do {
            try confirms.open()
            if try !Topology.queueExists(Topology.resultsStream, on: connection) {
                try Topology.declareResults(on: connection, channel: Self.channel)
            }
            if try !Topology.queueExists(Topology.deadQueue, on: connection) {
                try Topology.declareDeadLetters(on: connection, channel: Self.channel)
            }
        } catch let error as AMQPError {
            connection.close()
            throw WarrenError(broker: error)
        }
    }

    /// Closes the connection.
    public func close() {
        connection.close()
    }

    /// How many jobs wait in job queue `queue` and in its delay queues.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` when there is no such queue or it is none of jobs,
    ///   `broker` when the connection fails).
    public func count(_ queue: String) throws -> Count {
        if let problem = Topology.problem(withJobQueue: queue) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        return try brokerCall {
            guard let info = try Topology.lookUp(queue, on: connection) else { throw Self.noQueue(queue) }
            let delayed = try delayQueues(of: queue).reduce(0) { $0 + $1.count }
            return Count(waiting: Int(info.messageCount), delayed: delayed)
        }
    }

    /// Purges job queue `queue` and its delay queues: each job ends `cancelled`, reason `purged`
    /// (``QueuePurge``). The delay queues go first, so that a job moving back to `queue` meanwhile is still taken.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` when there is no such queue or it is none of jobs,
    ///   `broker` when the connection fails, `timeout` when the broker does not confirm within 30 s: the jobs
    ///   of that moment stay in their queue, but their results may be out).
    public func purge(_ queue: String) throws -> Report {
        if let problem = Topology.problem(withJobQueue: queue) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        return try brokerCall {
            guard try Topology.lookUp(queue, on: connection) != nil else { throw Self.noQueue(queue) }
            var report = Report()
            for delay in try delayQueues(of: queue) {
                try purge(delay.name, count: delay.count, jobQueue: queue, into: &report)
            }
            let waiting = try Topology.lookUp(queue, on: connection).map { Int($0.messageCount) } ?? 0
            try purge(queue, count: waiting, jobQueue: queue, into: &report)
            return report
        }
    }

    /// The delay queues of `queue` that hold jobs, and how many.
    private func delayQueues(of queue: String) throws -> [(name: String, count: Int)] {
        try Topology.delayQueueSeconds.compactMap { seconds in
            let name = Topology.delayQueue(for: queue, seconds: seconds)
            guard let info = try Topology.lookUp(name, on: connection), info.messageCount > 0 else { return nil }
            return (name, Int(info.messageCount))
        }
    }

    /// Takes up to `count` messages from `name`, chunk by chunk, and ends each.
    private func purge(_ name: String, count: Int, jobQueue: String, into report: inout Report) throws {
        var left = count
        while left > 0 {
            var taken: [Delivery] = []
            while taken.count < min(left, Self.chunk), let delivery = try connection.get(name, channel: Self.channel) {
                taken.append(delivery)
            }
            guard !taken.isEmpty else { return }
            left -= taken.count
            try end(taken, jobQueue: jobQueue, into: &report)
        }
    }

    /// Ends the jobs of `deliveries`; acknowledges each once the broker confirmed what was published for it.
    private func end(_ deliveries: [Delivery], jobQueue: String, into report: inout Report) throws {
        let first = confirms.lastSequenceNumber + 1
        var numbers: [[UInt64]] = []
        var stored: [(body: [UInt8], index: Int)] = []
        var outcomes: [Outcome] = []
        for (index, delivery) in deliveries.enumerated() {
            let (outcome, result, published) = try end(delivery, jobQueue: jobQueue)
            outcomes.append(outcome)
            numbers.append(published)
            if let result { stored.append((result, index)) }
        }
        for batch in ResultBatch.split(stored.map(\.body), maxBytes: Self.maxBatchBytes) {
            let number = try storeBatch(batch)
            // The results of a batch are in `stored` order: the batch's number goes to their deliveries.
            for entry in stored.prefix(batch.count) { numbers[entry.index].append(number) }
            stored.removeFirst(batch.count)
        }
        let refused = confirms.lastSequenceNumber >= first ? try waitForConfirms() : []
        for (index, delivery) in deliveries.enumerated() {
            if numbers[index].contains(where: refused.contains) {
                try connection.nack(delivery.deliveryTag, requeue: true, channel: Self.channel)
                report.refused += 1
                continue
            }
            try connection.ack(delivery.deliveryTag, channel: Self.channel)
            switch outcomes[index] {
            case .cancelled(let id): report.cancelled.append(id)
            case .deadLettered(let id, let reason): report.deadLettered.append((id, reason))
            }
        }
    }

    private enum Outcome {
        case cancelled(String)
        case deadLettered(String?, reason: String)
    }

    /// Releases the lock of `delivery`'s job and publishes its result, or dead-letters a message that is no job;
    /// returns the result to store and the numbers of the publishes.
    private func end(_ delivery: Delivery, jobQueue: String) throws -> (Outcome, [UInt8]?, [UInt64]) {
        let now = Date()
        let descriptor: OperationDescriptor
        do {
            descriptor = try decoder.decode(
                delivery.body, contentType: delivery.properties.contentType,
                contentEncoding: delivery.properties.contentEncoding)
        } catch let error as JobError {
            return try deadLetter(delivery, error: error, jobQueue: jobQueue, at: now)
        }
        try release(HeldLock(descriptor))
        let cancellation = Cancellation(reason: "purged", message: "purged from queue '\(jobQueue)' by warren purge")
        let result = JobResult(
            jobID: descriptor.id, type: descriptor.type, sequence: descriptor.sequence, key: descriptor.key,
            status: .cancelled, cancellation: cancellation, attempt: delivery.attempt,
            redelivered: delivery.redelivered, requeuedAt: delivery.requeuedAt,
            workerID: Self.workerID,
            timings: JobTimings(enqueuedAt: descriptor.createdAt, receivedAt: now, finishedAt: now))
        let (body, number) = try publish(result, replyTo: delivery.replyQueue)
        return (.cancelled(descriptor.id), body, [number])
    }

    /// Dead-letters a message that is no valid descriptor, as a worker would, after releasing the lock it claims;
    /// publishes a `failed` result when it names a job id.
    private func deadLetter(
        _ delivery: Delivery, error: JobError, jobQueue: String, at now: Date
    ) throws -> (Outcome, [UInt8]?, [UInt64]) {
        let salvaged = JobDecoder.salvage(from: delivery.body)
        let id = [salvaged.id, delivery.properties.messageID].lazy.compactMap { $0 }
            .first { OperationDescriptor.problem(withID: $0) == nil }
        try release(HeldLock(salvaged))
        let properties = Topology.deadLetterProperties(
            of: delivery.properties, reason: error.code, message: error.message, queue: jobQueue)
        var numbers = [
            try confirms.publish(
                delivery.body, exchange: Topology.deadExchange, routingKey: delivery.routingKey, properties: properties)
        ]
        var body: [UInt8]?
        if let id {
            let result = JobResult(
                jobID: id, type: salvaged.type ?? delivery.properties.type, sequence: salvaged.sequence ?? 0,
                key: salvaged.key, status: .failed, error: error, attempt: delivery.attempt,
                redelivered: delivery.redelivered, requeuedAt: delivery.requeuedAt,
                workerID: Self.workerID, timings: JobTimings(receivedAt: now, finishedAt: now))
            let published = try publish(result, replyTo: delivery.replyQueue)
            body = published.body
            numbers.append(published.number)
        }
        return (.deadLettered(id, reason: error.code), body, numbers)
    }

    /// Publishes `result` as a worker does: to the job's reply queue if it names one, else to the results exchange.
    private func publish(_ result: JobResult, replyTo: String?) throws -> (body: [UInt8], number: UInt64) {
        let body = try result.encoded()
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, correlationID: result.jobID,
            timestamp: UInt64(Date().timeIntervalSince1970), type: result.status.messageType, appID: "warren")
        let number = try confirms.publish(
            body, exchange: replyTo == nil ? Topology.resultsExchange : "", routingKey: replyTo ?? result.jobID,
            properties: properties)
        return (body, number)
    }

    /// Waits until the broker answered every publish; returns the numbers of those it refused (`basic.nack`).
    /// - Throws: ``WarrenError`` (`timeout`) when the answers do not come within 30 s; `AMQPError` when the
    ///   connection fails or the broker closes the channel.
    private func waitForConfirms(timeout: Duration = .seconds(30)) throws -> Set<UInt64> {
        guard try pump.dispatch(until: .now + timeout, isDone: { confirms.awaiting.isEmpty }) else {
            throw WarrenError(
                .timeout,
                "the broker did not confirm \(confirms.awaiting.count) message(s) within \(timeout) "
                    + "(\(WarrenError.unconfirmedCauses))")
        }
        return Set(confirms.takeAnswers().filter { !$0.isAck }.map(\.number))
    }

    /// Appends encoded results to the results stream, as one message, as a worker stores them.
    private func storeBatch(_ results: [[UInt8]]) throws -> UInt64 {
        let alone = results.count == 1
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, timestamp: UInt64(Date().timeIntervalSince1970),
            type: alone ? "warren.result" : ResultBatch.messageType, appID: "warren")
        return try confirms.publish(
            alone ? results[0] : ResultBatch.body(of: results), exchange: "", routingKey: Topology.resultsStream,
            properties: properties)
    }

    /// Releases `lock`, if any, as a worker does when a job ends for good. A lock whose queue is out of reach, that
    /// another job holds now, or that the broker refuses to release stays: it expires by itself.
    private func release(_ lock: HeldLock?) throws {
        guard let lock else { return }
        if !lockChannelOpen {
            try connection.openChannel(Self.lockChannel)
            lockChannelOpen = true
        }
        do {
            _ = try UniqueLock.release(key: lock.key, jobID: lock.jobID, on: connection, channel: Self.lockChannel)
        } catch let error as AMQPError where error.channel == Self.lockChannel {
            // Refused (its queue declared otherwise, no permission): the broker closed the channel.
            lockChannelOpen = false
        }
    }

    private static func noQueue(_ queue: String) -> WarrenError {
        WarrenError(.invalidConfiguration, "there is no queue '\(queue)' on the broker")
    }

    private func brokerCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AMQPError {
            throw WarrenError(broker: error)
        }
    }
}
