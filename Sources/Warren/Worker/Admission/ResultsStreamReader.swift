import AMQP
import Foundation
import Logging

/// The worker's reading of the `warren.results` stream, for dependencies: every result stored there from a day
/// back on, as it is stored (``BrokerLink/Channel/results``), and single messages read again by offset for
/// dependencies that ended before their dependents arrived (``BrokerLink/Channel/fetch``, ``ResultFetches``).
///
/// Where the reading starts takes care. A timestamp that no chunk of the stream is as recent as (the stream is
/// empty, or has been silent for the whole horizon) resolves to the next chunk to be written, and RabbitMQ skips a
/// chunk written while such a consumer attaches: a dependency's result missed, its dependents parked for good. A
/// numeric offset has no such race. So an empty stream is read from offset 0; any other is first probed at its
/// last chunk. The probe also tells where the first reading catches up (``ResultsCatchUp``).
/// Thread safety: confined to the worker's broker thread.
final class ResultsStreamReader {
    private let link: BrokerLink
    private let logger: Logger
    /// Whether this connection reads the stream, or is about to.
    private(set) var isReading = false
    /// The consumer that reads the stream's last chunk before the reading starts, until it did.
    private var probe: String?
    /// Whether the reading of the stream started (else the probe starts it).
    private var consumesStream = false
    /// The first reading of the stream, up to where it ended when it started.
    private(set) var catchUp = ResultsCatchUp()
    /// Results of dependencies being read by offset.
    private var fetches = ResultFetches()

    /// How far back the results stream is read for dependencies.
    static let horizon: TimeInterval = 86_400

    init(link: BrokerLink, logger: Logger) {
        self.link = link
        self.logger = logger
    }

    /// The connection was lost, or a new one is set up: the reading starts again when it is next needed.
    func reset() {
        isReading = false
        probe = nil
        consumesStream = false
        catchUp.reset()
    }

    /// Starts reading the stream, from ``horizon`` ago, unless it is read already. What it reads goes to `stored` and
    /// `fetched` (``stored(_:)``, ``fetched(_:)``).
    func start(stored: @escaping (Delivery) throws -> Void, fetched: @escaping (Delivery) throws -> Void) throws {
        guard !isReading else { return }
        let connection = link.connection
        try connection.openChannel(BrokerLink.Channel.fetch)
        try connection.qos(prefetchCount: 1, channel: BrokerLink.Channel.fetch)
        fetches.removeAll()
        try connection.openChannel(BrokerLink.Channel.results)
        try connection.qos(prefetchCount: 1000, channel: BrokerLink.Channel.results)
        isReading = true
        catchUp.start()
        link.route(BrokerLink.Channel.results, deliveries: stored)
        link.route(BrokerLink.Channel.fetch, deliveries: fetched)
        let stored = try connection.declareQueue(
            Topology.resultsStream, passive: true, channel: BrokerLink.Channel.results)
        if stored.messageCount == 0 { try consume(from: .int(0)) }
        probe = try connection.consume(
            Topology.resultsStream, arguments: ["x-stream-offset": "last"], channel: BrokerLink.Channel.fetch)
    }

    /// A message of the stream: a batch of results, or one result; returns them with its offset.
    func stored(_ delivery: Delivery) throws -> (results: [JobResult], offset: UInt64?) {
        try link.connection.ack(delivery.deliveryTag, multiple: true, channel: BrokerLink.Channel.results)
        var results: [JobResult] = []
        for case .success(let result) in ResultBatch.results(in: delivery.body, type: delivery.properties.type) {
            results.append(result)
        }
        return (results, delivery.streamOffset)
    }

    /// The stream was read to `offset`: the rest of the last chunk comes in the same read, as a rule, so the
    /// catching up ends with the turn.
    func read(upTo offset: UInt64?) {
        catchUp.read(offset)
    }

    /// Whether `result`, read from the stream, is held back: a failure read while catching up, which a later run's
    /// result may supersede.
    func holdsBack(_ result: JobResult) -> Bool {
        catchUp.holds(result)
    }

    /// Whether a failure of `jobID` is held back while catching up.
    func holdsBackFailure(of jobID: String) -> Bool {
        catchUp.isHolding(jobID)
    }

    /// The failures held back while catching up, once the reading caught up this turn; `nil` until then.
    func caughtUp() -> [JobResult]? {
        catchUp.reachedEnd ? catchUp.finish() : nil
    }

    /// Reads the stream message at `offset` for `jobID`'s result, unless it is being read or waits to be.
    func fetch(_ jobID: String, at offset: UInt64) throws {
        fetches.want(jobID, at: offset)
        try startFetches()
    }

    /// Starts the reads of the offsets that wait for their turn.
    private func startFetches() throws {
        while let offset = fetches.nextRead() {
            let consumerTag = try link.connection.consume(
                Topology.resultsStream, arguments: ["x-stream-offset": .int(Int64(clamping: offset))],
                channel: BrokerLink.Channel.fetch)
            fetches.started(consumerTag, reading: offset)
        }
    }

    /// A message read by the probe or a fetch. For a fetch: the results wanted from it, and the job ids whose
    /// results it did not hold (the stream no longer holds that offset: retention took it, and the read began
    /// further on). Nothing while the fetch has not reached its offset yet.
    func fetched(_ delivery: Delivery) throws -> (found: [JobResult], missing: [String]) {
        try link.connection.ack(delivery.deliveryTag, multiple: true, channel: BrokerLink.Channel.fetch)
        if delivery.consumerTag == probe {
            try probed(delivery)
            return ([], [])
        }
        guard let requested = fetches.offset(readBy: delivery.consumerTag) else { return ([], []) }
        let offset = delivery.streamOffset
        if let offset, offset < requested { return ([], []) }
        try link.connection.cancelConsumer(delivery.consumerTag, channel: BrokerLink.Channel.fetch)
        var missing = fetches.finish(delivery.consumerTag)
        try startFetches()
        var found: [JobResult] = []
        if offset == requested {
            for case .success(let result) in ResultBatch.results(in: delivery.body, type: delivery.properties.type)
            where missing.remove(result.jobID) != nil {
                found.append(result)
            }
        }
        for jobID in missing.sorted() {
            logger.warning(
                "the results stream no longer holds a dependency's result; its dependents run without it",
                metadata: ["dependency": "\(jobID)", "offset": "\(requested)"])
        }
        return (found, missing.sorted())
    }

    /// The first message of the probe of the stream's last chunk: unless it started already, reading starts at the
    /// horizon's timestamp if that chunk is more recent (the timestamp then resolves to a chunk that exists), else
    /// at the chunk's own offset.
    private func probed(_ delivery: Delivery) throws {
        probe = nil
        try link.connection.cancelConsumer(delivery.consumerTag, channel: BrokerLink.Channel.fetch)
        catchUp.probed(lastChunk: delivery.streamOffset)
        guard !consumesStream else { return }
        let horizon = UInt64(max(0, Date().timeIntervalSince1970 - Self.horizon))
        if let last = delivery.streamOffset, let written = delivery.properties.timestamp, written < horizon {
            try consume(from: .int(Int64(clamping: last)))
        } else {
            try consume(from: .timestamp(horizon))
        }
    }

    private func consume(from offset: AMQPFieldValue) throws {
        consumesStream = true
        logger.debug("reading the results stream for dependencies", metadata: ["from": "\(offset)"])
        try link.connection.consume(
            Topology.resultsStream, arguments: ["x-stream-offset": offset], channel: BrokerLink.Channel.results)
    }
}
