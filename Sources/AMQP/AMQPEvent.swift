/// A message delivered to a consumer (`basic.deliver`) or fetched with `basic.get`.
public struct Delivery: Sendable {
    public var channel: UInt16
    public var consumerTag: String
    /// Valid only on ``channel`` of the connection that received it: it dies with the channel.
    public var deliveryTag: UInt64
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    public var properties: MessageProperties
    public var body: [UInt8]

    public init(
        channel: UInt16, consumerTag: String, deliveryTag: UInt64, redelivered: Bool, exchange: String,
        routingKey: String, properties: MessageProperties, body: [UInt8]
    ) {
        self.channel = channel
        self.consumerTag = consumerTag
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
        self.properties = properties
        self.body = body
    }
}

/// Something the broker sent that was not the reply to a request.
public enum AMQPEvent: Sendable {
    /// A message for one of our consumers.
    case delivery(Delivery)
    /// A publisher confirm: `ack` is `false` for `basic.nack` (the broker could not take the message).
    /// With `multiple`, it covers every unconfirmed publish up to and including `deliveryTag`.
    case confirm(channel: UInt16, deliveryTag: UInt64, multiple: Bool, ack: Bool)
    /// A mandatory publish that no queue took (`basic.return`), with the `message_id` it was published with.
    case returned(
        channel: UInt16, replyCode: UInt16, replyText: String, exchange: String, routingKey: String,
        messageID: String?)
    /// The broker cancelled one of our consumers (its queue was deleted, for example).
    case consumerCancelled(channel: UInt16, consumerTag: String)
    /// The broker closed a channel; it has been acknowledged and must be reopened before use.
    case channelClosed(AMQPError)
    /// The broker stopped reading from this connection (`connection.blocked`), for example on a memory alarm.
    case blocked(reason: String)
    /// The broker reads from this connection again.
    case unblocked
}
