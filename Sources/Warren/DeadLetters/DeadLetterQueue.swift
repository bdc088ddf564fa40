import AMQP
import Foundation

/// Inspects and replays the dead-letter queue (`warren.dead`).
///
/// Listing takes each message and puts it back: the queue is unchanged afterwards (its order may change).
/// Requeueing republishes the original message to its job queue with a fresh attempt count, waits for the
/// broker's confirm, and only then removes it from the dead-letter queue: nothing is lost on the way.
///
/// Thread safety: confined, like ``Producer``: use it from the thread that created it.
public final class DeadLetterQueue {
    static let channel: UInt16 = 1
    let connection: AMQPConnection
    /// Publishes on the channel so far: the broker numbers each one's confirm in turn.
    private var published = 0

    /// Connects, and declares the dead-letter exchange and queue unless the queue exists (a client that finds it
    /// needs no permission to configure it).
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL, `broker` when the connection fails,
    ///   `queueUnreachable` when the queue lives on a cluster node that is down).
    public init(url: String) throws {
        connection = try BrokerAddresses(url, connectionName: "warren dead").connect()
        let unreachable = WarrenError(
            .queueUnreachable,
            "the dead-letter queue \(Topology.deadQueue) is on a cluster node that is down or out of reach")
        do {
            try connection.openChannel(Self.channel)
            let exists = try Topology.lookUp(Topology.deadQueue, on: connection) != nil
            guard try exists || Topology.declareDeadLetters(on: connection, channel: Self.channel) else {
                connection.close()
                throw unreachable
            }
            try connection.enableConfirms(channel: Self.channel)
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
            return (deliveries.prefix(limit).map(DeadLetter.init), total)
        }
    }

    /// What ``requeue(jobIDs:limit:)`` did.
    public struct RequeueReport: Sendable {
        /// Letters sent back to their job queues.
        public var requeued: [DeadLetter] = []
        /// Letters that stay dead: they name no queue, or their queue no longer exists.
        public var stayed: [DeadLetter] = []
    }

    /// Sends dead letters back to the queues they came from, with their attempt count reset: the oldest letter of
    /// each job whose id is in `jobIDs`, or every one (up to `limit`) when `jobIDs` is `nil`.
    ///
    /// Given ids, it takes letters only until it found one of each: those it takes and leaves go back to the queue,
    /// which RabbitMQ takes long to do for many. A later letter of the same job (one job dead-lettered twice, as a
    /// duplicate delivery can be) stays: requeueing both would run the job twice.
    public func requeue(jobIDs: Set<String>? = nil, limit: Int = 100_000) throws -> RequeueReport {
        try brokerCall {
            var report = RequeueReport()
            var sent: [(tag: UInt64, letter: DeadLetter)] = []
            var unfound = jobIDs ?? []
            let taken = try take(limit: limit) { delivery in
                guard jobIDs != nil else { return true }
                if let id = DeadLetter(delivery).jobID { unfound.remove(id) }
                return !unfound.isEmpty
            }
            var chosenIDs: Set<String> = []
            func isChosen(_ letter: DeadLetter) -> Bool {
                guard let jobIDs else { return true }
                guard let id = letter.jobID, jobIDs.contains(id) else { return false }
                return chosenIDs.insert(id).inserted
            }
            for delivery in taken.deliveries {
                let letter = DeadLetter(delivery)
                let chosen = isChosen(letter)
                guard chosen, let queue = letter.queue else {
                    if chosen { report.stayed.append(letter) }
                    try connection.nack(delivery.deliveryTag, requeue: true, channel: Self.channel)
                    continue
                }
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
                try connection.publish(
                    delivery.body, exchange: "", routingKey: queue, properties: properties, mandatory: true,
                    channel: Self.channel)
                sent.append((delivery.deliveryTag, letter))
            }
            let tags = (published + 1)..<(published + 1 + sent.count)
            published += sent.count
            let unroutable = try waitForConfirms(tags, of: sent.map(\.1))
            for (tag, letter) in sent {
                if let queue = letter.queue, unroutable.contains(queue) {
                    try connection.nack(tag, requeue: true, channel: Self.channel)
                    report.stayed.append(letter)
                } else {
                    try connection.ack(tag, channel: Self.channel)
                    report.requeued.append(letter)
                }
            }
            return report
        }
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

    /// Waits for the confirms of the publishes numbered `tags` on the channel, the copies of `letters`; returns the
    /// routing keys of mandatory publishes no queue took. The broker confirms copies bound for different queues in
    /// any order, a `multiple` confirm covering only the tags up to its own still unconfirmed: each tag is counted
    /// once.
    private func waitForConfirms(_ tags: Range<Int>, of letters: [DeadLetter]) throws -> Set<String> {
        var unconfirmed = IndexSet(integersIn: tags)
        var returned: [String] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while !unconfirmed.isEmpty {
            guard let event = try connection.nextEvent() else {
                guard ContinuousClock.now < deadline else {
                    throw WarrenError(
                        .timeout,
                        "the broker did not confirm the requeued messages within 30 s (\(WarrenError.unconfirmedCauses)): "
                            + "the letters stay in warren.dead, but their copies may reach "
                            + "their queues once it reads them; look there before requeueing them again")
                }
                connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(200))
                continue
            }
            switch event {
            case .confirm(_, let tag, let multiple, let ack):
                guard ack else {
                    let index = Int(tag) - tags.lowerBound
                    let letter = letters.indices.contains(index) ? letters[index] : nil
                    throw WarrenError(
                        .broker,
                        "the broker refused the copy of job \(letter?.jobID ?? "(no id)") for queue "
                            + "'\(letter?.queue ?? "?")' (basic.nack: is the queue at its length limit, with "
                            + "x-overflow reject-publish?); the letters not requeued stay in warren.dead")
                }
                if multiple {
                    unconfirmed.remove(integersIn: 1..<(Int(tag) + 1))
                } else {
                    unconfirmed.remove(Int(tag))
                }
            case .returned(_, _, _, _, let routingKey, _):
                returned.append(routingKey)
            case .channelClosed(let error):
                throw error
            default:
                break
            }
        }
        return Set(returned)
    }

    private func brokerCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }
}
