import AMQP
import Foundation
import Logging

/// The end of a job's path: results published and stored, the broker's confirms counted, deliveries acknowledged.
///
/// A job is acknowledged only once the broker confirmed every message published on its behalf (``Settlement``):
/// its result, and the stream batch that stores it (``StoredResults``, ``SentBatches``), or its dead letter or
/// delayed copy. Acks leave in batches (``AckBatch``). Results of jobs whose delivery died with a connection wait
/// for the redelivery (``OrphanResults``).
///
/// What the broker refuses goes to the ``delegate``: it concerns dead letters and delay queues, not settling.
/// Thread safety: confined to the worker's broker thread.
final class Settlements: WakesTheLoop {
    /// A publish the broker refused, which the worker must deal with beyond settling.
    enum Refusal {
        /// The dead letter of a job: hold the job and publish the letter again later.
        case deadLetter(Delivery, JobError)
        /// A job's delayed copy: requeue the job later, so that it runs again.
        case delayedCopy(deliveryTag: UInt64)
        /// A job's result (its reply queue full, say): running the job again would loop; dead-letter it.
        case result(Settlement)
    }

    /// The broker refused a publish; called while a confirm is counted.
    weak var delegate: (any SettlementsDelegate)?
    /// Told of each result published, once it went out (or failed to): the status counts, the jobs that wait for
    /// it.
    var resultPublished: (JobResult) -> Void = { _ in }

    private let link: BrokerLink
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Settlements waiting for the broker to confirm a publish on the publish channel.
    private var unconfirmed = PendingConfirms()
    /// Results published and not yet appended to the results stream, to append together when due.
    private var storedResults = StoredResults()
    /// Result batches appended to the results stream and not yet confirmed.
    private var sentBatches = SentBatches()
    /// Job deliveries not settled yet, and acks not sent yet.
    private var acks = AckBatch()
    /// Results of jobs that finished after their delivery died with a connection, kept for the redelivery.
    private var orphans = OrphanResults()

    /// Result batches waiting for their confirms past which new batches hold their jobs' acks until confirmed.
    static let maxUnconfirmedBatches = 64

    init(link: BrokerLink, logger: Logger, metrics: WorkerMetrics) {
        self.link = link
        self.logger = logger
        self.metrics = metrics
    }

    /// When held acks or results are due, or refused batches go again.
    var nextWake: ContinuousClock.Instant? {
        [acks.dueAt, storedResults.dueAt, sentBatches.resendAt].compactMap { $0 }.min()
    }

    /// Whether results, batches or acks wait to be sent or confirmed.
    var isAwaitingBroker: Bool {
        !(unconfirmed.isEmpty && storedResults.isEmpty && acks.isEmpty && sentBatches.isEmpty)
    }

    /// The prefetch window changed: acks are held until a quarter of it waits, results to store until all of it.
    func windowChanged(to prefetch: Int) {
        acks.hold.threshold = max(1, prefetch / 4)
        storedResults.hold.threshold = prefetch
    }

    // MARK: - Connections

    /// A new connection is set up: delivery tags start again, and the store channel opens.
    func connected() throws {
        acks.reset()
        try link.connection.openChannel(BrokerLink.Channel.store)
        try link.connection.enableConfirms(channel: BrokerLink.Channel.store)
    }

    /// The connection was lost: whether the broker stored the results it did not confirm is unknown, so they are
    /// kept for the redeliveries of their jobs.
    func connectionLost() {
        for settlement in unconfirmed.removeAll() + storedResults.clear() + sentBatches.channelLost() {
            if let result = settlement.result { orphans.keep(result) }
        }
    }

    // MARK: - Orphan results

    /// Keeps the result of a job whose delivery died, for its redelivery.
    func keepForRedelivery(_ result: JobResult) {
        orphans.keep(result)
    }

    /// The result kept for the redelivery of job `jobID`, taken out.
    func takeKeptResult(of jobID: String) -> JobResult? {
        orphans.take(jobID)
    }

    /// Whether results wait for their jobs' redeliveries.
    var keepsResults: Bool { !orphans.isEmpty }

    /// Forgets the results kept for redeliveries that did not come here in time (``OrphanResults/maxAge``).
    func forgetExpiredResults() {
        guard !orphans.isEmpty else { return }
        let expired = orphans.forgetExpired()
        guard !expired.isEmpty else { return }
        logger.info(
            """
            forgetting the results of jobs that ended after their delivery was lost: their redeliveries did not come \
            here within \(orphans.maxAge.components.seconds) s; should one come, it runs its job again
            """,
            metadata: ["jobs": .array(expired.map { "\($0)" })])
    }

    // MARK: - Deliveries

    /// A job delivery arrived: it is open until settled.
    func received(_ deliveryTag: UInt64) {
        acks.received(deliveryTag)
    }

    /// Nacks a job delivery now: back to its queue, or (`requeue: false`) to the queue's dead-letter exchange.
    func nack(_ deliveryTag: UInt64, requeue: Bool) throws {
        acks.reject(deliveryTag)
        try link.connection.nack(deliveryTag, requeue: requeue, channel: BrokerLink.Channel.jobs)
    }

    /// Settles a job delivery that was handled without publishing: acknowledged with the next acks.
    func acknowledge(_ deliveryTag: UInt64) {
        acks.acknowledge(deliveryTag)
    }

    /// Sends the acks that are due, batched (``AckBatch``).
    func sendAcks() throws {
        let batch = acks.take()
        if let upTo = batch.upTo { try link.connection.ack(upTo, multiple: true, channel: BrokerLink.Channel.jobs) }
        for tag in batch.singles { try link.connection.ack(tag, channel: BrokerLink.Channel.jobs) }
    }

    // MARK: - Settling

    /// Settles `deliveryTag` (ack or requeue) once every one of `confirms` has come.
    /// - Parameters:
    ///   - result: The result those publishes carry, kept in case the connection dies before the confirm.
    ///   - delivery: The job's delivery, to dead-letter if the broker refuses its result; `nil` when these publishes
    ///     dead-letter it already.
    ///   - channel: The delivery's channel.
    ///   - deadLettered: The delivery and error, when these publishes dead-letter the job.
    func settle(
        _ deliveryTag: UInt64, action: Settlement.Action, after confirms: [Settlement.Confirm],
        result: JobResult? = nil, delivery: Delivery? = nil, channel: UInt16 = BrokerLink.Channel.jobs,
        deadLettered: (delivery: Delivery, error: JobError)? = nil
    ) throws {
        let settlement = Settlement(
            deliveryTag: deliveryTag, channel: channel, action: action, unconfirmed: confirms.count, result: result,
            delivery: delivery, deadLettered: deadLettered)
        guard !confirms.isEmpty else { return try apply(settlement) }
        for confirm in confirms {
            switch confirm {
            case .publish(let number): unconfirmed.append(settlement, awaiting: number)
            case .reply(let number):
                settlement.replyNumber = number
                unconfirmed.append(settlement, awaiting: number)
            case .storedResults: storedResults.waitFor(settlement)
            }
        }
    }

    /// Takes in the broker's confirm (`ack`) or refusal of the publishes up to `tag` (`multiple`) or of `tag`
    /// alone, on the publish channel.
    func published(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        for (number, settlement) in unconfirmed.confirmed(upTo: tag, multiple: multiple) {
            if !ack && number == settlement.replyNumber {
                settlement.replyRefused = true
                try countConfirm(of: settlement)
            } else {
                try countConfirm(of: settlement, refused: !ack)
            }
        }
    }

    /// Takes in the broker's answer to result batches on the store channel (``SentBatches``).
    func stored(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        let (refused, settlements) = sentBatches.confirmed(upTo: tag, multiple: multiple, ack: ack)
        if refused > 0 {
            logger.error(
                "the broker refused result batches for the results stream; appending them again",
                metadata: ["batches": "\(refused)", "in": "\(sentBatches.retryDelay)"])
        }
        for settlement in settlements { try countConfirm(of: settlement, refused: !ack) }
    }

    /// Counts one of the confirms `settlement` waits for (a refusal when `refused`), and applies it once it has
    /// them all.
    private func countConfirm(of settlement: Settlement, refused: Bool = false) throws {
        settlement.unconfirmed -= 1
        if refused { settlement.refused = true }
        if settlement.unconfirmed == 0 { try apply(settlement) }
    }

    private func apply(_ settlement: Settlement) throws {
        if settlement.channel == BrokerLink.Channel.deadWatch { return try settleWatchedLetter(settlement) }
        if settlement.refused {
            if let (delivery, error) = settlement.deadLettered {
                try delegate?.refused(.deadLetter(delivery, error))
            } else {
                try delegate?.refused(.delayedCopy(deliveryTag: settlement.deliveryTag))
            }
            return
        }
        if settlement.replyRefused {
            try delegate?.refused(.result(settlement))
            return
        }
        if settlement.action == .ack {
            acks.acknowledge(settlement.deliveryTag)
        } else {
            try nack(settlement.deliveryTag, requeue: true)
        }
    }

    /// Acknowledges a copy of a dead letter whose job's result the broker confirmed; one whose result it refused is
    /// acknowledged too, with an error: the letter stays in `warren.dead`, and `warren dead requeue` runs the job
    /// again.
    private func settleWatchedLetter(_ settlement: Settlement) throws {
        if settlement.replyRefused {
            logger.error(
                "the broker refused the failed result of a job it dead-lettered itself; its letter stays in warren.dead")
        }
        try link.connection.ack(settlement.deliveryTag, channel: BrokerLink.Channel.deadWatch)
    }

    // MARK: - Results

    /// The largest result a job may have: one the broker takes (the results stream stores it alone, not in a batch,
    /// when a batch of it would be larger).
    var maxResultBytes: Int { link.maxMessageBytes }

    /// Publishes `result` for whoever waits for it: to the job's reply queue `replyTo` through the default
    /// exchange if the job named one, otherwise to the results exchange. Adds it to the batch for the results
    /// stream, and returns the confirms that settle it.
    /// - Parameter body: The result, encoded, if it is already.
    func publish(_ result: JobResult, body: [UInt8]? = nil, replyTo: String?) throws -> [Settlement.Confirm] {
        defer { resultPublished(result) }
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, correlationID: result.jobID,
            timestamp: UInt64(Date().timeIntervalSince1970), type: result.status.messageType,
            appID: "warren")
        let body = try body ?? result.encoded()
        keepBatchesUnderBrokerLimit()
        if !storedResults.hasRoom(for: body.count) { try storeResults(force: true) }
        let confirm = try link.publish(
            body, exchange: replyTo == nil ? Topology.resultsExchange : "", routingKey: replyTo ?? result.jobID,
            properties: properties)
        storedResults.append(body)
        metrics.jobFinished(result)
        return [.reply(confirm), .storedResults]
    }

    /// Appends the results published since the last call to the `warren.results` stream, as one message, if they
    /// are due (``StoredResults``) or `force` says so: the loop forces it once no job is left in flight whose
    /// result could join them. Batches the broker refused, or did not confirm before the connection died, go first.
    ///
    /// The jobs whose results the batch holds do not wait for its confirm, only for its publication: their acks
    /// leave after it on this connection (``SentBatches``). While many batches wait for their confirms, new ones
    /// hold their jobs' acks until they are confirmed, so that a broker slow to store slows the worker down.
    func storeResults(force: Bool = false) throws {
        keepBatchesUnderBrokerLimit()
        while var results = sentBatches.dueForResend() {
            // In as many messages as the broker's largest message takes (it may have told its limit since), without
            // a result it refused alone: its job, not settled, runs again and fails (resultTooLarge).
            let count = results.count
            results.removeAll { $0.count > maxResultBytes }
            if results.count < count {
                logger.error(
                    "not storing results larger than the broker takes; their jobs end failed (resultTooLarge)",
                    metadata: ["results": "\(count - results.count)"])
            }
            let batches = ResultBatch.split(results, maxBytes: storedResults.maxBytes)
            for batch in batches { try publishBatch(batch) }
            sentBatches.resent(as: batches)
        }
        guard force || storedResults.dueAt.map({ $0 <= .now }) == true, let batches = storedResults.batches else {
            return
        }
        for batch in batches { try publishBatch(batch) }
        let settlements = storedResults.clear()
        let holdsSettlements = sentBatches.count >= Self.maxUnconfirmedBatches
        for batch in batches.dropLast() { sentBatches.sent(batch) }
        // The broker confirms a channel's publishes in order: the last batch's confirm covers those before it.
        sentBatches.sent(batches[batches.count - 1], holding: holdsSettlements ? settlements : [])
        guard !holdsSettlements else { return }
        for settlement in settlements { try countConfirm(of: settlement) }
    }

    /// Keeps stream batches within the broker's largest message, once it told it.
    private func keepBatchesUnderBrokerLimit() {
        if storedResults.maxBytes > link.maxMessageBytes { storedResults.maxBytes = link.maxMessageBytes }
    }

    /// Publishes encoded `results` to the `warren.results` stream, on the store channel, as a batch; a single result
    /// whose batch the broker would not take (26 bytes more) goes alone, a message readers take as one result.
    private func publishBatch(_ results: [[UInt8]]) throws {
        let batch = ResultBatch.body(of: results)
        let alone = results.count == 1 && batch.count > link.maxMessageBytes
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, timestamp: UInt64(Date().timeIntervalSince1970),
            type: alone ? "warren.result" : ResultBatch.messageType, appID: "warren")
        try link.connection.publish(
            alone ? results[0] : batch, exchange: "", routingKey: Topology.resultsStream, properties: properties,
            channel: BrokerLink.Channel.store)
    }

    /// The broker closed the store channel: for a batch larger than it takes (`max_message_size`, before the
    /// worker learnt it), the worker learns its limit, opens the channel again and appends the batches it had not
    /// confirmed again, split to fit: the jobs whose results they hold were acknowledged or will be, and run no
    /// more. Anything else ends the connection, as on any other channel.
    func storeChannelClosed(_ error: AMQPError) throws {
        guard link.learnMaxMessageSize(from: error) else { throw error }
        try link.connection.openChannel(BrokerLink.Channel.store)
        try link.connection.enableConfirms(channel: BrokerLink.Channel.store)
        for settlement in sentBatches.channelLost() { try countConfirm(of: settlement) }
        try storeResults()
    }

    /// Says what a worker that is done leaves unsettled, if anything.
    func logLeftUnsettled() {
        if isAwaitingBroker {
            logger.warning(
                """
                leaving results and acks the broker has not confirmed (does it block this connection?): it \
                redelivers their jobs unless it stored them
                """)
        }
        if !orphans.isEmpty {
            logger.warning(
                "dropping the results of jobs that ended after their delivery was lost: their redeliveries run them again",
                metadata: ["jobs": .array(orphans.jobIDs.map { "\($0)" })])
        }
    }
}

/// Deals with what the broker refused to take on a job's behalf (``Settlements/Refusal``).
protocol SettlementsDelegate: AnyObject {
    func refused(_ refusal: Settlements.Refusal) throws
}
