import AMQP
import Foundation
import Logging

/// The worker's connection to the broker: the channels it opens, the confirm numbers of its publish channel, and
/// what the broker told of itself (its largest message, whether it blocks the connection).
///
/// The session replaces the connection after a reconnect; components that talk to the broker reach it here, on
/// the broker thread, and nowhere else.
/// Thread safety: confined to the worker's broker thread.
final class BrokerLink {
    /// The channels of a worker's connection, each with one use.
    enum Channel {
        static let jobs: UInt16 = 1
        /// The confirm channel for results, dead letters, delayed copies, progress and control messages.
        static let publish: UInt16 = 2
        static let control: UInt16 = 3
        /// The consumer that reads the `warren.results` stream for dependencies.
        static let results: UInt16 = 4
        /// The confirm channel that appends result batches to the `warren.results` stream.
        static let store: UInt16 = 5
        /// The consumers that read single messages of the results stream.
        static let fetch: UInt16 = 6
        /// Releases unique jobs' locks; opened when first needed.
        static let lock: UInt16 = 7
        /// Asks for turns under fleet-wide rate limits.
        static let rate: UInt16 = 8
        /// Consumes the copies of dead letters.
        static let deadWatch: UInt16 = 9
        /// Status replies.
        static let status: UInt16 = 10
    }

    private(set) var connection: AMQPConnection
    /// Counts connections: a delivery tag is valid only on the connection of its generation.
    private(set) var generation = 1
    /// Routes what the broker sends to the handler of its channel.
    private(set) var pump: AMQPEventPump
    /// ``Channel/publish``: each publish that settles a job carries its settlement, which its confirm answers.
    private(set) var publisher: ConfirmChannel<Settlement?>
    /// Publishes for a settlement not answered yet: what a stopping worker waits for. The others (progress reports,
    /// control messages) it leaves unanswered.
    var unansweredSettlingPublishes = 0
    /// The largest message body the broker takes: RabbitMQ's default `max_message_size`, until the broker refuses a
    /// larger one and tells its own.
    private(set) var maxMessageBytes = 128 << 20
    /// Why the broker blocks this connection, while it does (`connection.blocked`).
    var blockedReason: String?
    /// The longest the loop may sleep: half the heartbeat interval, so that heartbeats go out in time.
    let longestSleep: Duration
    private let logger: Logger

    init(connection: AMQPConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
        longestSleep = .milliseconds(max(connection.configuration.heartbeat, 2) * 500)
        pump = AMQPEventPump(connection)
        publisher = ConfirmChannel(Channel.publish, on: connection)
    }

    /// Takes a new connection in place of the lost one, with a pump and a publish channel of its own.
    func replace(with connection: AMQPConnection) {
        self.connection = connection
        generation += 1
        pump = AMQPEventPump(connection)
        publisher = ConfirmChannel(Channel.publish, on: connection)
        unansweredSettlingPublishes = 0
    }

    /// Opens the publish channel of a new connection, whose confirm numbers start at 1.
    func openPublishChannel() throws {
        blockedReason = nil
        try publisher.open()
    }

    /// Publishes on the publish channel, for `settlement` if it settles a job; returns the confirm number.
    @discardableResult
    func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties,
        settling settlement: Settlement? = nil
    ) throws -> UInt64 {
        let number = try publisher.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, awaiting: settlement)
        if let settlement {
            settlement.unconfirmed += 1
            unansweredSettlingPublishes += 1
        }
        return number
    }

    /// Routes the deliveries of `channel` to `body`. A consumer the broker cancels there, or the channel's close, ends
    /// the connection: the worker reconnects and consumes again.
    func route(_ channel: UInt16, deliveries body: @escaping (Delivery) throws -> Void) {
        let route = ChannelRoute(onDelivery: body)
        route.onConsumerCancel = { tag in throw Self.consumerCancelled(tag) }
        pump.route(channel, to: route)
    }

    /// The error of a consumer the broker cancelled that the worker cannot do without.
    static func consumerCancelled(_ tag: String) -> AMQPError {
        AMQPError(.channelClosed, "the broker cancelled consumer '\(tag)' (was its queue deleted?)")
    }

    /// The settlements whose publishes the connection took with it, unanswered.
    func unansweredSettlements() -> [Settlement] {
        var awaiting = publisher.awaiting
        return awaiting.removeAll().compactMap(\.payload)
    }

    /// Takes in the broker's largest message, when `error` is its refusal of a larger one; whether it is smaller
    /// than what the worker knew.
    @discardableResult
    func learnMaxMessageSize(from error: AMQPError) -> Bool {
        guard let limit = error.brokerMaxMessageSize, limit < maxMessageBytes, limit > 0 else { return false }
        maxMessageBytes = limit
        logger.warning(
            """
            the broker takes messages of at most \(limit) bytes (max_message_size): results, result batches and \
            status replies are kept under it; a job whose result is larger fails (resultTooLarge)
            """)
        return true
    }
}
