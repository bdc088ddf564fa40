import AMQP
import Foundation
import Logging

/// The end of a job's path: results published and stored, the broker's confirms counted, deliveries acknowledged.
///
/// A job is acknowledged only once the broker confirmed every message published on its behalf (``Settlement``):
/// its result, and the stream batch that stores it (``StoredResults``), or its dead letter or delayed copy. The
/// publish channel and the store channel are ``ConfirmChannel``s whose publishes carry what their confirms settle.
/// Acks leave in batches (``AckBatch``). Results of jobs whose delivery died with a connection wait for the
/// redelivery (``OrphanResults``).
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

    /// A batch of results appended to the stream, and the settlements that wait for its confirm.
    struct StoredBatch {
        let results: [[UInt8]]
        let settlements: [Settlement]
    }

    /// The broker refused a publish; called while a confirm is counted.
    weak var delegate: (any SettlementsDelegate)?
    /// Told of each result published, once it went out (or failed to): the status counts, the jobs that wait for
    /// it.
    var resultPublished: (JobResult) -> Void = { _ in }

    private let link: BrokerLink
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Results published and not yet appended to the results stream, to append together when due.
    private var storedResults = StoredResults()
    /// The confirm channel that appends result batches to the `warren.results` stream, in a channel process of the
    /// broker other than the one routing results: the stream write does not hold up the results' confirms.
    private var store: ConfirmChannel<StoredBatch>
    /// Batches to append again.
    private var resends = BatchResends()
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
        store = ConfirmChannel(BrokerLink.Channel.store, on: link.connection)
    }

    /// When held acks or results are due, or refused batches go again.
    var nextWake: ContinuousClock.Instant? {
        guard !(acks.isEmpty && storedResults.isEmpty && resends.isEmpty) else { return nil }
        return acks.dueAt.earliest(storedResults.dueAt).earliest(resends.resendAt)
    }

    /// Whether results, batches or acks wait to be sent or confirmed.
    var isAwaitingBroker: Bool {
        !(link.unansweredSettlingPublishes == 0 && storedResults.isEmpty && acks.isEmpty && store.awaiting.isEmpty
            && resends.isEmpty)
    }

    /// The prefetch window changed: acks are held until a quarter of it waits, results to store until all of it.
    func windowChanged(to prefetch: Int) {
        acks.hold.threshold = max(1, prefetch / 4)
        storedResults.hold.threshold = prefetch
    }

    // MARK: - Connections

    /// A new connection is set up: delivery tags start again, and the store channel opens. Confirms are routed
    /// here.
    func connected() throws {
        acks.reset()
        store = ConfirmChannel(BrokerLink.Channel.store, on: link.connection)
        try store.open()
        let route = ChannelRoute()
        route.onConfirm = { [unowned self] in try stored(upTo: $0, multiple: $1, ack: $2) }
        route.onClose = { [unowned self] in try storeChannelClosed($0) }
        link.pump.route(BrokerLink.Channel.store, to: route)
        let publishing = ChannelRoute()
        publishing.onConfirm = { [unowned self] in try published(upTo: $0, multiple: $1, ack: $2) }
        link.pump.route(BrokerLink.Channel.publish, to: publishing)
    }

    /// The connection was lost: whether the broker stored the results it did not confirm is unknown, so they are
    /// kept for the redeliveries of their jobs; the batches it did not confirm go again on the next connection.
    func connectionLost() {
        var awaiting = store.awaiting
        let lost = awaiting.removeAll().map(\.payload)
        resends.lost(lost.map(\.results))
        link.unansweredSettlingPublishes = 0
        for settlement in link.unansweredSettlements() + storedResults.clear() + lost.flatMap(\.settlements) {
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

    /// A settlement of `deliveryTag` (ack or requeue), for the publishes made on its behalf: pass it to them, then
    /// to ``settle(_:)``.
    /// - Parameters:
    ///   - result: The result those publishes carry, kept in case the connection dies before the confirm.
    ///   - delivery: The job's delivery, to dead-letter if the broker refuses its result; `nil` when these publishes
    ///     dead-letter it already.
    ///   - channel: The delivery's channel.
    ///   - deadLettered: The delivery and error, when these publishes dead-letter the job.
    func settlement(
        of deliveryTag: UInt64, action: Settlement.Action = .ack, channel: UInt16 = BrokerLink.Channel.jobs,
        result: JobResult? = nil, delivery: Delivery? = nil, deadLettered: (delivery: Delivery, error: JobError)? = nil
    ) -> Settlement {
        Settlement(
            deliveryTag: deliveryTag, channel: channel, action: action, result: result, delivery: delivery,
            deadLettered: deadLettered)
    }

    /// Every publish for `settlement` was made: it is applied once the broker confirmed them all, at once if none.
    func settle(_ settlement: Settlement) throws {
        settlement.isComplete = true
        if settlement.unconfirmed == 0 { try apply(settlement) }
    }

    /// Takes in the broker's confirm (`ack`) or refusal of the publishes up to `tag` (`multiple`) or of `tag`
    /// alone, on the publish channel.
    func published(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        // Taken out first: settling publishes again on the same channel (a refused result's dead letter).
        var answered: [(number: UInt64, settlement: Settlement)] = []
        link.publisher.answer(upTo: tag, multiple: multiple, ack: ack) { answer in
            if let settlement = answer.payload { answered.append((answer.number, settlement)) }
        }
        link.unansweredSettlingPublishes -= answered.count
        for (number, settlement) in answered {
            if !ack && number == settlement.replyNumber {
                settlement.replyRefused = true
                try countConfirm(of: settlement)
            } else {
                try countConfirm(of: settlement, refused: !ack)
            }
        }
    }

    /// Takes in the broker's answer to result batches on the store channel: a refused batch goes again a second
    /// later; the settlements that waited for a batch count its answer.
    func stored(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        var refused = 0
        var settlements: [Settlement] = []
        store.answer(upTo: tag, multiple: multiple, ack: ack) { answer in
            settlements += answer.payload.settlements
            guard !answer.isAck else { return }
            resends.refused(answer.payload.results)
            refused += 1
        }
        if refused > 0 {
            logger.error(
                "the broker refused result batches for the results stream; appending them again",
                metadata: ["batches": "\(refused)", "in": "\(resends.retryDelay)"])
        }
        for settlement in settlements { try countConfirm(of: settlement, refused: !ack) }
    }

    /// Counts one of the confirms `settlement` waits for (a refusal when `refused`), and applies it once it has
    /// them all.
    private func countConfirm(of settlement: Settlement, refused: Bool = false) throws {
        settlement.unconfirmed -= 1
        if refused { settlement.refused = true }
        if settlement.unconfirmed == 0, settlement.isComplete { try apply(settlement) }
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
                "the broker refused the failed result of a job it dead-lettered itself; its letter stays in warren.dead"
            )
        }
        try link.connection.ack(settlement.deliveryTag, channel: BrokerLink.Channel.deadWatch)
    }

    // MARK: - Results

    /// The largest result a job may have: one the broker takes (the results stream stores it alone, not in a batch,
    /// when a batch of it would be larger).
    var maxResultBytes: Int { link.maxMessageBytes }

    /// Publishes `result` for `settlement`, for whoever waits for it: to the job's reply queue `replyTo` through the
    /// default exchange if the job named one, otherwise to the results exchange. Adds it to the batch for the
    /// results stream, whose publication the settlement waits for too.
    /// - Parameter body: The result, encoded, if it is already.
    func publish(_ result: JobResult, body: [UInt8]? = nil, replyTo: String?, settling settlement: Settlement) throws {
        defer { resultPublished(result) }
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, correlationID: result.jobID,
            timestamp: UInt64(Date().timeIntervalSince1970), type: result.status.messageType,
            appID: "warren")
        let body = try body ?? result.encoded()
        keepBatchesUnderBrokerLimit()
        if !storedResults.hasRoom(for: body.count) { try storeResults(force: true) }
        settlement.replyNumber = try link.publish(
            body, exchange: replyTo == nil ? Topology.resultsExchange : "", routingKey: replyTo ?? result.jobID,
            properties: properties, settling: settlement)
        storedResults.append(body)
        storedResults.waitFor(settlement)
        settlement.unconfirmed += 1
        metrics.jobFinished(result)
    }

    /// Appends the results published since the last call to the `warren.results` stream, as one message, if they
    /// are due (``StoredResults``) or `force` says so: the loop forces it once no job is left in flight whose
    /// result could join them. Batches the broker refused, or did not confirm before the connection died, go first.
    ///
    /// The jobs whose results the batch holds do not wait for its confirm, only for its publication: their acks
    /// leave after it on this connection. While many batches wait for their confirms, new ones hold their jobs'
    /// acks until they are confirmed, so that a broker slow to store slows the worker down.
    func storeResults(force: Bool = false) throws {
        keepBatchesUnderBrokerLimit()
        while var results = resends.dueForResend() {
            // In as many messages as the broker's largest message takes (it may have told its limit since), without
            // a result it refused alone: its job, not settled, runs again and fails (resultTooLarge).
            let count = results.count
            results.removeAll { $0.count > maxResultBytes }
            if results.count < count {
                logger.error(
                    "not storing results larger than the broker takes; their jobs end failed (resultTooLarge)",
                    metadata: ["results": "\(count - results.count)"])
            }
            for batch in ResultBatch.split(results, maxBytes: storedResults.maxBytes) {
                try publishBatch(StoredBatch(results: batch, settlements: []))
            }
            resends.resent()
        }
        guard force || storedResults.dueAt.map({ $0 <= .now }) == true, let batches = storedResults.batches else {
            return
        }
        let waiting = storedResults.waiting
        let holdsSettlements = store.awaiting.count + resends.count >= Self.maxUnconfirmedBatches
        // The broker confirms a channel's publishes in order: the last batch's confirm covers those before it.
        for (index, batch) in batches.enumerated() {
            let holding = holdsSettlements && index == batches.count - 1 ? waiting : []
            try publishBatch(StoredBatch(results: batch, settlements: holding))
        }
        let settlements = storedResults.clear()
        guard !holdsSettlements else { return }
        for settlement in settlements { try countConfirm(of: settlement) }
    }

    /// Keeps stream batches within the broker's largest message, once it told it.
    private func keepBatchesUnderBrokerLimit() {
        if storedResults.maxBytes > link.maxMessageBytes { storedResults.maxBytes = link.maxMessageBytes }
    }

    /// Publishes a batch of encoded results to the `warren.results` stream, on the store channel; a single result
    /// whose batch the broker would not take (26 bytes more) goes alone, a message readers take as one result.
    private func publishBatch(_ batch: StoredBatch) throws {
        let body = ResultBatch.body(of: batch.results)
        let alone = batch.results.count == 1 && body.count > link.maxMessageBytes
        let properties = MessageProperties(
            contentType: WireCoding.contentType, persistent: true, timestamp: UInt64(Date().timeIntervalSince1970),
            type: alone ? "warren.result" : ResultBatch.messageType, appID: "warren")
        try store.publish(
            alone ? batch.results[0] : body, exchange: "", routingKey: Topology.resultsStream, properties: properties,
            awaiting: batch)
    }

    /// The broker closed the store channel: for a batch larger than it takes (`max_message_size`, before the
    /// worker learnt it), the worker learns its limit, opens the channel again and appends the batches it had not
    /// confirmed again, split to fit: the jobs whose results they hold were acknowledged or will be, and run no
    /// more. Anything else ends the connection, as on any other channel.
    func storeChannelClosed(_ error: AMQPError) throws {
        try? store.channelClosed(error)  // marks it closed
        guard link.learnMaxMessageSize(from: error) else { throw error }
        let lost = try store.open().map(\.payload)
        resends.lost(lost.map(\.results))
        for settlement in lost.flatMap(\.settlements) { try countConfirm(of: settlement) }
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
