import AMQP
import Foundation

/// A producer's control commands: cancellations, supersessions, pauses, resumes, resizes and status requests,
/// published to the `warren.control` stream that every worker reads; and what the broker holds for job queues.
///
/// Each command waits for the broker's confirm. Right after the broker restarts, while the stream starts again,
/// a command waits for it, up to 15 seconds.
///
/// Thread safety: confined to the thread of its ``Producer``.
final class ControlClient {
    /// The channel that receives workers' status answers, on a reply queue of its own for each request.
    static let statusChannel: UInt16 = 4

    private let link: ProducerConnection
    private let sequences: SequenceFile
    private var controlDeclared = false
    /// Whether ``statusChannel`` is open: a status request that failed, or timed out, leaves it so.
    private var statusChannelOpen = false

    init(link: ProducerConnection, sequences: SequenceFile) {
        self.link = link
        self.sequences = sequences
    }

    private var connection: AMQPConnection { link.connection }

    /// Publishes `messages` and waits for the broker's confirms.
    /// - Throws: ``AMQPError`` or ``WarrenError`` as they come: the caller says what they mean.
    func send(_ messages: [ControlMessage]) throws {
        for message in messages { try publish(message) }
        try link.waitForConfirms()
    }

    /// Cancels jobs wherever they are (``Producer/cancel(jobIDs:)``).
    func cancel(jobIDs: [String]) throws {
        try link.brokerCall {
            // In messages of at most 10,000 ids: workers read none larger than 8 MiB.
            try send(
                stride(from: 0, to: jobIDs.count, by: ControlMessage.idsPerCancel).map { start in
                    .cancel(jobIDs: Array(jobIDs[start..<min(start + ControlMessage.idsPerCancel, jobIDs.count)]))
                })
        }
    }

    /// Cancels every job of `key` whose sequence is below `sequence`.
    func supersede(key: String, before sequence: UInt64) throws {
        try link.brokerCall { try send([.supersede(key: key, before: sequence)]) }
    }

    /// Cancels every job enqueued before this call, of `queue` or of every queue.
    func cancelAll(queue: String?) throws {
        try link.brokerCall { try send([.cancelAll(before: try sequences.next(), queue: queue)]) }
    }

    /// Pauses taking jobs, on every worker or on `worker`, from every queue or from `queue`.
    func pause(worker: String?, queue: String?) throws {
        try link.brokerCall { try send([.pause(worker: worker, queue: queue)]) }
    }

    /// Resumes what ``pause(worker:queue:)`` paused.
    func resume(worker: String?, queue: String?) throws {
        try link.brokerCall { try send([.resume(worker: worker, queue: queue)]) }
    }

    /// Sets the width of local queue `localQueue` on every live worker that has it, or on `worker` alone.
    func resize(localQueue: String, width: Int, worker: String?) throws {
        guard LocalQueue.widths.contains(width) else {
            throw WarrenError(
                .invalidConfiguration,
                "width \(width) is outside \(LocalQueue.widths.lowerBound)...\(LocalQueue.widths.upperBound)")
        }
        try link.brokerCall { try send([.resize(localQueue: localQueue, width: width, worker: worker)]) }
    }

    /// How long ``workerStatuses(timeout:jobs:awaitingOne:)`` waits at least for the broker to take its request
    /// before it concludes that the broker blocks publishers.
    static let statusConfirmWait = Duration.seconds(2)

    /// Asks every live worker for its status and returns the answers that arrive within `timeout`
    /// (``Producer/workerStatuses(timeout:jobs:awaiting:)``), as soon as an answer `awaited` accepts came.
    func workerStatuses(
        timeout: Duration, jobs: Int?, awaitingOne awaited: ((WorkerStatus) -> Bool)?
    ) throws -> [WorkerStatus] {
        try link.brokerCall {
            let channel = Self.statusChannel
            // A request that failed left it open, with its consumer: answers to it must not count for this one.
            if statusChannelOpen { try connection.closeChannel(channel) }
            statusChannelOpen = false
            try connection.openChannel(channel)
            statusChannelOpen = true
            defer { link.pump.removeRoute(channel) }
            do {
                return try collectStatuses(on: channel, timeout: timeout, jobs: jobs, awaitingOne: awaited)
            } catch let error as AMQPError where error.channel == channel {
                statusChannelOpen = false  // the broker closed it
                throw error
            }
        }
    }

    /// Asks for the workers' statuses on `channel`, open, and collects their answers; closes the channel.
    private func collectStatuses(
        on channel: UInt16, timeout: Duration, jobs: Int?, awaitingOne awaited: ((WorkerStatus) -> Bool)?
    ) throws -> [WorkerStatus] {
        let replyQueue = try connection.declareQueue(
            "", durable: false, exclusive: true, autoDelete: true, channel: channel
        ).name
        // By worker id, host and process: workers given the same id by mistake answer each.
        var statuses: [String: WorkerStatus] = [:]
        link.pump.route(channel) { delivery in
            guard let status = try? WorkerStatus.decode(delivery.body) else { return }
            statuses["\(status.workerID)\u{0}\(status.host)\u{0}\(status.pid)"] = status
        }
        try connection.consume(replyQueue, noAck: true, channel: channel)
        try publish(.status(replyTo: replyQueue, jobs: jobs))
        let start = ContinuousClock.now
        let done = { awaited.map { statuses.values.contains(where: $0) } ?? false }
        try link.pump.dispatch(until: start + timeout, isDone: done)
        // No answer can come before the broker took the request; a broker that blocks this connection answers
        // no call either, closing the channel included. A timeout shorter than the broker's confirm takes does
        // not make a blocked broker of it.
        let confirmWait = max(timeout, Self.statusConfirmWait)
        if statuses.isEmpty {
            try link.pump.dispatch(until: start + confirmWait) { link.isAnswered }
        }
        guard !statuses.isEmpty || link.isAnswered else {
            throw WarrenError(
                .timeout,
                "the broker did not take the status request within \(confirmWait) (\(WarrenError.unconfirmedCauses))")
        }
        try link.waitForConfirms()
        try connection.closeChannel(channel)
        statusChannelOpen = false
        return statuses.values.sorted {
            ($0.workerID, $0.host, $0.pid) < ($1.workerID, $1.host, $1.pid)
        }
    }

    /// What the broker holds for job queue `queue` (``Producer/jobQueueStatus(_:)``).
    func jobQueueStatus(_ queue: String) throws -> JobQueueStatus? {
        try link.brokerCall {
            guard let info = try Topology.lookUp(queue, on: connection) else { return nil }
            var delayed = 0
            for seconds in Topology.delayQueueSeconds {
                let delayQueue = Topology.delayQueue(for: queue, seconds: seconds)
                delayed += Int(try Topology.lookUp(delayQueue, on: connection)?.messageCount ?? 0)
            }
            return JobQueueStatus(
                queue: queue, waiting: Int(info.messageCount), delayed: delayed, consumers: Int(info.consumerCount))
        }
    }

    /// Whether the broker delivers the jobs of `queue` highest priority first.
    func deliversByPriority(_ queue: String) throws -> Bool {
        try link.brokerCall { try Topology.isPriorityQueue(queue, on: connection) }
    }

    /// Whether job queue `queue` is known to be a classic queue; `false` also when it does not exist.
    func isClassicQueue(_ queue: String) throws -> Bool {
        try link.brokerCall {
            try Topology.lookUp(queue, on: connection) != nil && Topology.isKnownClassicQueue(queue, on: connection)
        }
    }

    /// How many messages the dead-letter queue holds, or `nil` when there is no such queue.
    func deadLetterCount() throws -> Int? {
        try link.brokerCall { try Topology.lookUp(Topology.deadQueue, on: connection).map { Int($0.messageCount) } }
    }

    private func publish(_ message: ControlMessage) throws {
        if !controlDeclared {
            try declareControl()
            controlDeclared = true
        }
        try link.publish(
            try message.encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true, appID: "warren"))
    }

    /// Declares the control exchange and stream on ``Topology/declarationChannel``, unless the stream exists (a
    /// producer that finds it, which a worker made, needs no permission to configure it), and again while the
    /// stream is still starting (a worker just created it, or the broker just restarted): the broker then closes that
    /// channel, not the one the jobs went out on, whose confirms are still awaited.
    private func declareControl() throws {
        let channel = Topology.declarationChannel
        try AMQPError.retryingWhileStreamStarts {
            guard try Topology.lookUp(Topology.controlStream, on: connection) == nil else { return }
            try connection.openChannel(channel)
            try Topology.declareControl(on: connection, channel: channel)
            try connection.closeChannel(channel)
        }
    }
}
