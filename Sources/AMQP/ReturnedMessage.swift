/// A mandatory publish that no queue took, as the broker sent it back (`basic.return`).
public struct ReturnedMessage: Sendable, Equatable {
    /// The broker's reason: 312 `NO_ROUTE` when no queue is bound for the routing key.
    public var replyCode: UInt16
    /// The broker's words for it: `NO_ROUTE`.
    public var replyText: String
    /// The exchange the message was published to; empty for the default exchange.
    public var exchange: String
    /// The routing key it was published with: the queue's name, through the default exchange.
    public var routingKey: String
    /// The `message_id` property it was published with.
    public var messageID: String?

    /// A returned message as the broker describes it.
    public init(replyCode: UInt16, replyText: String, exchange: String, routingKey: String, messageID: String?) {
        self.replyCode = replyCode
        self.replyText = replyText
        self.exchange = exchange
        self.routingKey = routingKey
        self.messageID = messageID
    }
}
