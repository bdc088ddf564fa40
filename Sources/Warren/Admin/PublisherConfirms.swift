import AMQP
import Foundation

/// The publishes of one confirm-mode channel of a client that waits for their confirms in turn, as `warren purge`
/// does: numbers each publish as the broker does, and waits until the broker confirmed a range of them.
///
/// Thread safety: confined to the thread that owns the connection.
struct PublisherConfirms {
    let connection: AMQPConnection
    let channel: UInt16
    /// Publishes on the channel so far: the broker numbers each one's confirm in turn, from 1.
    private(set) var published: UInt64 = 0

    init(connection: AMQPConnection, channel: UInt16) {
        self.connection = connection
        self.channel = channel
    }

    /// Publishes a message on the channel; returns the number its confirm will carry.
    mutating func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties
    ) throws -> UInt64 {
        try connection.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, channel: channel)
        published += 1
        return published
    }

    /// Waits until the broker confirmed every publish numbered `numbers`; returns those it refused (`basic.nack`).
    /// The broker confirms messages bound for different queues in any order, and a `multiple` confirm covers only
    /// the numbers up to its own that are still unconfirmed: each number is counted once.
    /// - Throws: ``WarrenError`` (`timeout`) when the confirms do not come within `timeout`; `AMQPError` when the
    ///   connection fails or the broker closes the channel.
    func waitForConfirms(_ numbers: ClosedRange<UInt64>, timeout: Duration = .seconds(30)) throws -> Set<UInt64> {
        var unconfirmed = IndexSet(integersIn: Int(numbers.lowerBound)...Int(numbers.upperBound))
        var refused: Set<UInt64> = []
        let deadline = ContinuousClock.now + timeout
        while !unconfirmed.isEmpty {
            guard let event = try connection.nextEvent() else {
                guard ContinuousClock.now < deadline else {
                    throw WarrenError(
                        .timeout,
                        "the broker did not confirm \(unconfirmed.count) message(s) within \(timeout) "
                            + "(\(WarrenError.unconfirmedCauses))")
                }
                connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(200))
                continue
            }
            switch event {
            case .confirm(let on, let tag, let multiple, let ack) where on == channel:
                let covered = multiple ? IndexSet(integersIn: 1...Int(tag)) : IndexSet(integer: Int(tag))
                let answered = unconfirmed.intersection(covered)
                if !ack { refused.formUnion(answered.map(UInt64.init)) }
                unconfirmed.subtract(answered)
            case .channelClosed(let error):
                throw error
            default:
                break
            }
        }
        return refused
    }
}
