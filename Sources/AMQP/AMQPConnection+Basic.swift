internal import CRabbitMQ

/// Publishing, consuming and acknowledging.
extension AMQPConnection {
    /// Publishes a message. On a channel in confirm mode the broker confirms it later with an ``AMQPEvent/confirm``.
    public func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties = MessageProperties(),
        mandatory: Bool = false, channel: UInt16
    ) throws {
        try checkOpen("publish to exchange '\(exchange)'")
        corkIfRequested()
        let arena = CArena()
        var props = properties.encoded(in: arena)
        if outputHold == .buffered, body.count <= FrameBuffer.largestCopiedBody {
            var method = amqp_basic_publish_t(
                ticket: 0, exchange: arena.bytes(exchange), routing_key: arena.bytes(routingKey),
                mandatory: mandatory ? 1 : 0, immediate: 0)
            let status = body.withUnsafeBytes {
                frames.appendPublish(&method, properties: &props, body: $0, channel: channel, frameMax: frameMax)
            }
            return try check(status: status, "publish to exchange '\(exchange)'")
        }
        // A large body is not copied into the held output: what is held leaves first, then the message.
        if outputHold == .buffered { sendFrames() }
        // librabbitmq only reads the body while it writes the frames: no copy of it.
        let status = body.withUnsafeBytes { body in
            amqp_basic_publish(
                state, channel, arena.bytes(exchange), arena.bytes(routingKey), mandatory ? 1 : 0, 0, &props,
                amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress)))
        }
        try check(status: status, "publish to exchange '\(exchange)'")
    }

    /// Starts a consumer on `queue` and returns its tag. Deliveries arrive through ``nextEvent()``.
    @discardableResult
    public func consume(
        _ queue: String, consumerTag: String = "", noAck: Bool = false, exclusive: Bool = false,
        arguments: AMQPTable = [:], channel: UInt16
    ) throws -> String {
        try checkOpen("consume from queue '\(queue)'")
        flushOutput()
        let arena = CArena()
        let ok = amqp_basic_consume(
            state, channel, arena.bytes(queue), arena.bytes(consumerTag), 0, noAck ? 1 : 0, exclusive ? 1 : 0,
            arena.table(arguments))
        try check(amqp_get_rpc_reply(state), "consume from queue '\(queue)'", channel: channel)
        return ok.map { CDecode.string($0.pointee.consumer_tag) } ?? consumerTag
    }

    /// Stops a consumer. Deliveries already sent to it still arrive and must still be acknowledged.
    /// - Parameter awaitingReply: Whether to wait for the broker's `cancel-ok`; without it (`no-wait`), the cancel
    ///   is sent and the call returns at once, and deliveries may arrive until the broker has read it.
    public func cancelConsumer(_ consumerTag: String, channel: UInt16, awaitingReply: Bool = true) throws {
        try checkOpen("cancel consumer '\(consumerTag)'")
        flushOutput()
        let arena = CArena()
        guard awaitingReply else {
            var method = amqp_basic_cancel_t(consumer_tag: arena.bytes(consumerTag), nowait: 1)
            return try check(
                status: amqp_send_method(state, channel, AMQP_BASIC_CANCEL_METHOD, &method),
                "cancel consumer '\(consumerTag)'")
        }
        amqp_basic_cancel(state, channel, arena.bytes(consumerTag))
        try check(amqp_get_rpc_reply(state), "cancel consumer '\(consumerTag)'", channel: channel)
    }

    /// Acknowledges a delivery; with `multiple`, every unacknowledged delivery up to `deliveryTag` too.
    public func ack(_ deliveryTag: UInt64, multiple: Bool = false, channel: UInt16) throws {
        try checkOpen("acknowledge a delivery")
        if outputHold == .buffered {
            var method = amqp_basic_ack_t(delivery_tag: deliveryTag, multiple: multiple ? 1 : 0)
            return try check(status: appendMethod(AMQP_BASIC_ACK_METHOD, &method, channel), "acknowledge a delivery")
        }
        try check(status: amqp_basic_ack(state, channel, deliveryTag, multiple ? 1 : 0), "acknowledge a delivery")
    }

    /// Rejects a delivery: back to its queue with `requeue`, otherwise to the queue's dead-letter exchange (or gone).
    public func nack(_ deliveryTag: UInt64, multiple: Bool = false, requeue: Bool, channel: UInt16) throws {
        try checkOpen("reject a delivery")
        if outputHold == .buffered {
            var method = amqp_basic_nack_t(
                delivery_tag: deliveryTag, multiple: multiple ? 1 : 0, requeue: requeue ? 1 : 0)
            return try check(status: appendMethod(AMQP_BASIC_NACK_METHOD, &method, channel), "reject a delivery")
        }
        try check(
            status: amqp_basic_nack(state, channel, deliveryTag, multiple ? 1 : 0, requeue ? 1 : 0),
            "reject a delivery")
    }

    /// Fetches one message with `basic.get`, or `nil` when the queue is empty.
    public func get(_ queue: String, noAck: Bool = false, channel: UInt16) throws -> Delivery? {
        try getCounting(queue, noAck: noAck, channel: channel)?.delivery
    }

    /// Fetches one message with `basic.get`, and how many the queue holds besides (`basic.get-ok`'s count), or `nil`
    /// when the queue is empty. Unlike a passive declaration's count, which RabbitMQ answers ahead of what the queue
    /// has yet to do, this one counts the messages other channels put back (rejected, requeued) before.
    public func getCounting(
        _ queue: String, noAck: Bool = false, channel: UInt16
    ) throws -> (delivery: Delivery, remaining: UInt32)? {
        try checkOpen("get from queue '\(queue)'")
        flushOutput()
        let arena = CArena()
        let reply = amqp_basic_get(state, channel, arena.bytes(queue), noAck ? 1 : 0)
        try check(reply, "get from queue '\(queue)'", channel: channel)
        guard reply.reply.id == AMQP_BASIC_GET_OK_METHOD else { return nil }
        let ok = reply.reply.decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        var message = amqp_message_t()
        try check(amqp_read_message(state, channel, &message, 0), "read message from '\(queue)'", channel: channel)
        defer { amqp_destroy_message(&message) }
        let delivery = Delivery(
            channel: channel, consumerTag: "", deliveryTag: ok.delivery_tag, redelivered: ok.redelivered != 0,
            exchange: CDecode.string(ok.exchange), routingKey: CDecode.string(ok.routing_key),
            properties: MessageProperties(message.properties), body: CDecode.bytes(message.body))
        return (delivery, ok.message_count)
    }

    /// The negotiated frame size, which a held frame must fit in.
    private var frameMax: Int { Int(amqp_get_frame_max(state)) }

    /// Appends a method frame to the held output.
    private func appendMethod<Arguments>(
        _ method: amqp_method_number_t, _ arguments: inout Arguments, _ channel: UInt16
    ) -> Int32 {
        withUnsafeMutablePointer(to: &arguments) {
            frames.appendMethod(method, arguments: $0, channel: channel, frameMax: frameMax)
        }
    }
}
