/// A channel's handler made of closures, one for each kind of event the channel receives.
///
/// ```swift
/// let route = ChannelRoute(onDelivery: { [unowned self] in arrivals.append($0) })
/// route.onConfirm = { [unowned publishes] in publishes.confirmed(upTo: $0, multiple: $1, ack: $2) }
/// route.onConsumerCancel = { tag in throw SchedulerError.consumerLost(tag) }
/// pump.route(1, to: route)
/// ```
///
/// An event without a closure is ignored, but a channel close, which is thrown. The closures are made once, not
/// for each event; one that refers to the pump's owner should capture it `unowned`.
///
/// Thread safety: confined, like the pump that holds it.
public final class ChannelRoute: AMQPChannelHandler {
    /// Takes a delivery on the channel.
    public var onDelivery: ((Delivery) throws -> Void)?
    /// Takes the broker's answer to publish `number`, or with `multiple` to every publish up to it; `ack` is `false`
    /// for `basic.nack`.
    public var onConfirm: ((_ number: UInt64, _ multiple: Bool, _ ack: Bool) throws -> Void)?
    /// Takes a mandatory publish that no queue took.
    public var onReturn: ((ReturnedMessage) throws -> Void)?
    /// Takes the tag of a consumer the broker cancelled.
    public var onConsumerCancel: ((String) throws -> Void)?
    /// Takes the broker's close of the channel. Default: none, and the close is thrown.
    public var onClose: ((AMQPError) throws -> Void)?

    /// A route that hands deliveries to `onDelivery`, if given, and ignores the rest until its closures are set.
    public init(onDelivery: ((Delivery) throws -> Void)? = nil) {
        self.onDelivery = onDelivery
    }

    /// Hands `delivery` to ``onDelivery``.
    public func delivered(_ delivery: Delivery) throws {
        try onDelivery?(delivery)
    }

    /// Hands the broker's answer to ``onConfirm``.
    public func confirmed(upTo number: UInt64, multiple: Bool, ack: Bool) throws {
        try onConfirm?(number, multiple, ack)
    }

    /// Hands `message` to ``onReturn``.
    public func returned(_ message: ReturnedMessage) throws {
        try onReturn?(message)
    }

    /// Hands `consumerTag` to ``onConsumerCancel``.
    public func consumerCancelled(_ consumerTag: String) throws {
        try onConsumerCancel?(consumerTag)
    }

    /// Hands `error` to ``onClose``, or throws it when there is none.
    public func channelClosed(_ error: AMQPError) throws {
        guard let onClose else { throw error }
        try onClose(error)
    }
}
