/// What an ``AMQPEventPump`` does with the events of one channel.
///
/// ```swift
/// final class Replies: AMQPChannelHandler {
///     var bodies: [[UInt8]] = []
///     func delivered(_ delivery: Delivery) { bodies.append(delivery.body) }
/// }
/// pump.route(2, to: Replies())
/// ```
///
/// Implement what the channel receives; the others have defaults. By default a delivery, a confirm, a returned
/// message and a consumer's cancellation are ignored, and a channel close is thrown, which ends the dispatch.
///
/// Thread safety: called on the thread that owns the connection, from the pump's dispatch.
public protocol AMQPChannelHandler: AnyObject {
    /// A message for a consumer on the channel (`basic.deliver`).
    func delivered(_ delivery: Delivery) throws
    /// The broker's answer to the channel's publish `number`, or with `multiple` to every publish up to it.
    /// - Parameter ack: `true` for `basic.ack`, `false` for `basic.nack` (the broker could not take the messages).
    func confirmed(upTo number: UInt64, multiple: Bool, ack: Bool) throws
    /// A mandatory publish of the channel that no queue took (`basic.return`).
    func returned(_ message: ReturnedMessage) throws
    /// The broker cancelled a consumer of the channel (its queue was deleted, for example).
    func consumerCancelled(_ consumerTag: String) throws
    /// The broker closed the channel; it is acknowledged, and must be opened again before use.
    func channelClosed(_ error: AMQPError) throws
}

extension AMQPChannelHandler {
    /// Ignores the delivery.
    public func delivered(_ delivery: Delivery) throws {}
    /// Ignores the answer.
    public func confirmed(upTo number: UInt64, multiple: Bool, ack: Bool) throws {}
    /// Ignores the returned message.
    public func returned(_ message: ReturnedMessage) throws {}
    /// Ignores the cancellation.
    public func consumerCancelled(_ consumerTag: String) throws {}
    /// Throws `error`, which ends the dispatch.
    public func channelClosed(_ error: AMQPError) throws { throw error }
}
