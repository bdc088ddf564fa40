import AMQP
import Foundation

/// Inspects and replays the dead-letter queue (`warren.dead`).
///
/// Listing takes each message and puts it back: the queue is unchanged afterwards (its order may change).
/// Requeueing republishes the original message to its job queue with a fresh attempt count, waits for the
/// broker's confirm, and only then removes it from the dead-letter queue: nothing is lost on the way.
///
/// Thread safety: confined: use it from the thread that created it.
public final class DeadLetterQueue {
    static let channel: UInt16 = 1
    let connection: AMQPConnection
    private let pump: AMQPEventPump
    /// Where the copies of requeued letters go out, confirmed; the letters are taken and settled there too.
    private let copies: ConfirmChannel<Void>

    /// Connects, and declares the dead-letter exchange and queue unless the queue exists (a client that finds it
    /// needs no permission to configure it).
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL, `broker` when the connection fails,
    ///   `queueUnreachable` when the queue lives on a cluster node that is down).
    public init(url: String) throws {
        connection = try BrokerAddresses(url, connectionName: "warren dead").connect()
        pump = AMQPEventPump(connection)
        copies = ConfirmChannel(Self.channel, on: connection)
        pump.route(Self.channel, to: copies)
        let unreachable = WarrenError(
            .queueUnreachable,
            "the dead-letter queue \(Topology.deadQueue) is on a cluster node that is down or out of reach")
        do {
            try copies.open()
            let exists = try Topology.lookUp(Topology.deadQueue, on: connection) != nil
            guard try exists || Topology.declareDeadLetters(on: connection, channel: Self.channel) else {
                connection.close()
                throw unreachable
            }
        } catch let error as AMQPError where error.isQueueNodeDown {
            connection.close()
            throw unreachable
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }

    /// Closes the connection.
    public func close() {
        connection.close()
    }

    /// How many dead letters the queue holds (not counting those another client has taken and not yet settled, nor
    /// those being put back this instant: ``listing(limit:)`` counts them).
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func count() throws -> Int {
        try brokerCall { Int(try Topology.lookUp(Topology.deadQueue, on: connection)?.messageCount ?? 0) }
    }

    /// Up to `limit` dead letters, oldest first; the queue keeps them all.
    public func list(limit: Int = 1000) throws -> [DeadLetter] {
        try listing(limit: limit).letters
    }

    /// Up to `limit` dead letters (0: none, only the count), oldest first, and how many the queue held as the first
    /// was taken, letters that a listing just before put back included; the queue keeps them all.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func listing(limit: Int = 1000) throws -> (letters: [DeadLetter], total: Int) {
        try brokerCall {
            let (deliveries, total) = try take(limit: max(limit, 1))
            if let last = deliveries.last {
                try connection.nack(last.deliveryTag, multiple: true, requeue: true, channel: Self.channel)
            }
            return (deliveries.prefix(limit).map { DeadLetter($0) }, total)
        }
    }

    /// What ``requeue(jobIDs:limit:)`` did.
    public struct RequeueReport: Sendable {
        /// Letters sent back to their job queues.
        public var requeued: [DeadLetter] = []
        /// Letters that stay dead: they name no queue, or their queue no longer exists.
        public var stayed: [DeadLetter] = []
        /// Letters that stay dead because the broker refused their copy (`basic.nack`: the job queue is at its
        /// length limit, with `x-overflow` `reject-publish`; with `reject-publish-dlx` the broker dead-letters the
        /// copy too, so that `warren.dead` holds the job twice).
        public var refused: [DeadLetter] = []
        /// Later letters of a job whose letter was requeued in the same call: they stay dead, since sending both
        /// would run the job twice (one job dead-lettered twice, as a duplicate delivery can be).
        public var duplicates: [DeadLetter] = []
        /// Why the copies of the requeued letters could not be taken out of `warren.dead.watch` (the broker refused
        /// this user `read` on it, say), or `nil`: a worker that takes such a copy later answers a job the broker
        /// had dead-lettered with a `failed` result, although it runs again.
        public var copiesLeft: String?
    }

    /// Sends dead letters back to the queues they came from, with their attempt count reset: the oldest letter of
    /// each job whose id is in `jobIDs`, or of every job (up to `limit` letters) when `jobIDs` is `nil`. Each
    /// leaves `warren.dead` once the broker confirmed its copy; the others stay (``RequeueReport``).
    ///
    /// Given ids, it takes letters only until it found one of each: those it takes and leaves go back to the queue,
    /// which RabbitMQ takes long to do for many.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails; (`timeout`) when the broker does not confirm
    ///   the copies within 30 s: the letters stay, but copies may reach their queues.
    public func requeue(jobIDs: Set<String>? = nil, limit: Int = 100_000) throws -> RequeueReport {
        try brokerCall {
            var report = RequeueReport()
            var sent: [(number: UInt64, tag: UInt64, letter: DeadLetter)] = []
            var unfound = jobIDs ?? []
            let taken = try take(limit: limit) { delivery in
                guard jobIDs != nil else { return true }
                if let id = DeadLetter(delivery).jobID { unfound.remove(id) }
                return !unfound.isEmpty
            }
            var requeuedIDs: Set<String> = []
            // What came for the copies of an earlier call, which timed out, concerns none of this one's.
            _ = (copies.takeAnswers(), copies.takeReturns())
            for delivery in taken.deliveries {
                let letter = DeadLetter(delivery)
                let wanted = jobIDs.map { ids in letter.jobID.map(ids.contains) ?? false } ?? true
                guard wanted else {
                    try connection.nack(delivery.deliveryTag, requeue: true, channel: Self.channel)
                    continue
                }
                if let id = letter.jobID, !requeuedIDs.insert(id).inserted {
                    report.duplicates.append(letter)
                    try connection.nack(delivery.deliveryTag, requeue: true, channel: Self.channel)
                    continue
                }
                guard let queue = letter.queue else {
                    report.stayed.append(letter)
                    try connection.nack(delivery.deliveryTag, requeue: true, channel: Self.channel)
                    continue
                }
                let number = try copies.publish(
                    delivery.body, exchange: "", routingKey: queue, properties: Self.copyProperties(of: delivery),
                    mandatory: true)
                sent.append((number, delivery.deliveryTag, letter))
            }
            let (unroutable, refused) = try waitForConfirms()
            for (number, tag, letter) in sent {
                if refused.contains(number) {
                    try connection.nack(tag, requeue: true, channel: Self.channel)
                    report.refused.append(letter)
                } else if let queue = letter.queue, unroutable.contains(queue) {
                    try connection.nack(tag, requeue: true, channel: Self.channel)
                    report.stayed.append(letter)
                } else {
                    try connection.ack(tag, channel: Self.channel)
                    report.requeued.append(letter)
                }
            }
            report.copiesLeft = try discardCopies(of: Set(report.requeued.compactMap(\.jobID)))
            return report
        }
    }

    /// The channel on which ``discardCopies(of:)`` takes copies: closing it puts back those it took and left.
    static let watchChannel: UInt16 = 2

    /// Takes the copies of requeued jobs' letters out of ``Topology/deadWatchQueue``, where the broker put them as
    /// it made the letters, for workers to answer the jobs the broker dead-lettered itself: one taken after the
    /// requeue would give such a job a `failed` result although it runs again (jobs that expired while no worker
    /// ran, then requeued before the workers start, say). Copies workers took already were answered before the
    /// requeue, and the jobs' next results supersede those (``JobResult/requeuedAt``). Takes copies until it found
    /// one of each job (the others it took go back as it closes its channel), or none is left.
    /// - Returns: Why it could not (the broker refused it the queue), or `nil`.
    private func discardCopies(of jobIDs: Set<String>) throws -> String? {
        guard !jobIDs.isEmpty, try Topology.lookUp(Topology.deadWatchQueue, on: connection) != nil else { return nil }
        var unfound = jobIDs
        do {
            try connection.openChannel(Self.watchChannel)
            defer { try? connection.closeChannel(Self.watchChannel) }
            while !unfound.isEmpty, let copy = try connection.get(Topology.deadWatchQueue, channel: Self.watchChannel) {
                guard let id = DeadLetter(copy).jobID, unfound.remove(id) != nil else { continue }
                try connection.ack(copy.deliveryTag, channel: Self.watchChannel)
            }
            return nil
        } catch let error as AMQPError where error.code == .channelClosed {
            return error.description
        }
    }

    /// The properties of the copy of a dead letter: its own, without the reason of its death (Warren's headers and
    /// the broker's), with a first attempt, the time of the requeue and no expiration.
    private static func copyProperties(of delivery: Delivery) -> MessageProperties {
        var properties = delivery.properties
        var headers = properties.headers ?? [:]
        for name in [Topology.deadReasonHeader, Topology.deadMessageHeader, Topology.deadQueueHeader] {
            headers[name] = nil
        }
        // The broker's own record of earlier dead-letterings: the replay starts afresh.
        for name in ["x-death", "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason"] {
            headers[name] = nil
        }
        headers[Topology.attemptHeader] = 1
        headers[Topology.requeuedAtHeader] = .int(Int64(Date().timeIntervalSince1970 * 1000))
        properties.headers = headers
        properties.expiration = nil
        return properties
    }

    /// Takes up to `limit` messages, unacknowledged, and how many the queue held as the first was taken; stops
    /// after a message for which `more` returns `false`.
    private func take(
        limit: Int, while more: (Delivery) -> Bool = { _ in true }
    ) throws -> (deliveries: [Delivery], total: Int) {
        var deliveries: [Delivery] = []
        var total = 0
        while deliveries.count < limit,
            let (delivery, remaining) = try connection.getCounting(Topology.deadQueue, channel: Self.channel)
        {
            if deliveries.isEmpty { total = Int(remaining) + 1 }
            deliveries.append(delivery)
            guard more(delivery) else { break }
        }
        return (deliveries, total)
    }

    /// Waits for the confirms of the copies sent; returns the routing keys of those no queue took, and the numbers
    /// of those the broker refused. The broker confirms copies bound for different queues in any order.
    private func waitForConfirms() throws -> (unroutable: Set<String>, refused: Set<UInt64>) {
        guard try pump.dispatch(until: .now + .seconds(30), isDone: { copies.awaiting.isEmpty }) else {
            throw WarrenError(
                .timeout,
                "the broker did not confirm the requeued messages within 30 s (\(WarrenError.unconfirmedCauses)): "
                    + "the letters stay in warren.dead, but their copies may reach "
                    + "their queues once it reads them; look there before requeueing them again")
        }
        let refused = copies.takeAnswers().filter { !$0.isAck }.map(\.number)
        return (Set(copies.takeReturns().map(\.routingKey)), Set(refused))
    }

    private func brokerCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }
}
