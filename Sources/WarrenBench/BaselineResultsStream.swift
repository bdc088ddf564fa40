import AMQP
import Foundation
import Warren

/// The baseline's copy of Warren's results stream: each result also appended to a stream queue, in batches, on a
/// confirm channel of its own, as Warren's worker appends its results to `warren.results`.
///
/// A batch is due once a prefetch window's results wait, or 2 ms after its first result, or when the worker has no
/// job in flight whose result could join it. Its body is Warren's batch format (`{"results":[…],"version":1}`).
/// The deliveries whose results a batch holds are released for their acks once the batch is published. While 64
/// batches await their confirms, a new batch releases its deliveries only once the broker confirmed it. These are
/// the rules of Warren's `Settlements`, `StoredResults` and `HoldPolicy`.
///
/// Thread safety: confined to the baseline worker's thread, like its connection.
final class BaselineResultsStream {
    /// Batches awaiting their confirms past which a new batch holds its deliveries' acks until it is confirmed:
    /// Warren's `Settlements.maxUnconfirmedBatches`.
    static let maxUnconfirmedBatches = 64
    /// How long the first result of a batch waits at most: Warren's `HoldPolicy` default.
    static let maxDelay = Duration.milliseconds(2)

    private let stream: String
    private let threshold: Int
    private let store: ConfirmChannel<[UInt64]>
    /// The delivery tags whose results wait for the next batch.
    private var held: [UInt64] = []
    /// When the first result of the next batch was added; `nil` when none waits.
    private var oldestAddedAt: ContinuousClock.Instant?
    /// The delivery tags whose batches are stored as far as their acks need, not taken yet.
    private var released: [UInt64] = []

    /// Opens confirm channel `channel` on the pump's connection and routes its answers to it.
    /// - Parameters:
    ///   - stream: The stream queue batches go to, through the default exchange.
    ///   - threshold: How many results make a batch due at once: the prefetch.
    /// - Throws: `AMQPError` when the broker refuses the channel.
    init(stream: String, threshold: Int, channel: UInt16, on connection: AMQPConnection, pump: AMQPEventPump) throws {
        self.stream = stream
        self.threshold = threshold
        store = ConfirmChannel(channel, on: connection)
        try store.open()
        pump.route(channel, to: store)
    }

    /// Adds the result of delivery `deliveryTag` to the next batch.
    func append(_ deliveryTag: UInt64, at now: ContinuousClock.Instant = .now) {
        if oldestAddedAt == nil { oldestAddedAt = now }
        held.append(deliveryTag)
    }

    /// When the next batch is due (now, if it already is); `nil` when no result waits.
    var dueAt: ContinuousClock.Instant? {
        guard let oldestAddedAt else { return nil }
        return held.count >= threshold ? oldestAddedAt : oldestAddedAt + Self.maxDelay
    }

    /// Publishes the next batch if it is due, or if `force` says so: no job is left in flight.
    /// - Throws: `AMQPError` when the connection fails.
    func storeIfDue(force: Bool) throws {
        guard let dueAt, force || dueAt <= .now else { return }
        let holdsAcks = store.awaiting.count >= Self.maxUnconfirmedBatches
        let properties = MessageProperties(
            contentType: "application/json", persistent: true, timestamp: UInt64(Date().timeIntervalSince1970),
            type: ResultBatch.messageType, appID: "warren")
        try store.publish(
            BaselinePayloads.resultBatch(count: held.count), exchange: "", routingKey: stream, properties: properties,
            awaiting: holdsAcks ? held : [])
        if !holdsAcks { released += held }
        held.removeAll(keepingCapacity: true)
        oldestAddedAt = nil
    }

    /// The delivery tags released for their acks since the last call: their batches are published, or confirmed
    /// when they had to be.
    /// - Throws: `AMQPError` when the broker refused a batch.
    func takeReleased() throws -> [UInt64] {
        for answer in store.takeAnswers() {
            guard answer.isAck else { throw AMQPError(.library, "the broker refused a result batch (basic.nack)") }
            released += answer.payload
        }
        defer { released.removeAll(keepingCapacity: true) }
        return released
    }
}
