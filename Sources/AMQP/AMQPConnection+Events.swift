internal import CRabbitMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading what the broker sends on its own: deliveries, confirms, returns, closes.
extension AMQPConnection {
    /// Returns the next event the broker sent, without blocking; `nil` when nothing has arrived.
    ///
    /// Also sends and checks heartbeats.
    /// - Throws: ``AMQPError`` when the connection was lost or closed by the broker.
    public func nextEvent() throws -> AMQPEvent? {
        try checkOpen("receive from the broker")
        amqp_maybe_release_buffers(state)
        var envelope = amqp_envelope_t()
        var zero = timeval(tv_sec: 0, tv_usec: 0)
        let reply = amqp_consume_message(state, &envelope, &zero, 0)
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            defer { amqp_destroy_envelope(&envelope) }
            return .delivery(
                Delivery(
                    channel: envelope.channel, consumerTag: CDecode.string(envelope.consumer_tag),
                    deliveryTag: envelope.delivery_tag, redelivered: envelope.redelivered != 0,
                    exchange: CDecode.string(envelope.exchange), routingKey: CDecode.string(envelope.routing_key),
                    properties: MessageProperties(envelope.message.properties),
                    body: CDecode.bytes(envelope.message.body)))
        case AMQP_RESPONSE_LIBRARY_EXCEPTION where reply.library_error == AMQP_STATUS_TIMEOUT.rawValue:
            return nil
        case AMQP_RESPONSE_LIBRARY_EXCEPTION where reply.library_error == AMQP_STATUS_UNEXPECTED_STATE.rawValue:
            return try nextFrameEvent()
        default:
            try check(reply, "receive from the broker")
            return nil
        }
    }

    /// Reads the frame `amqp_consume_message` put back because it was not a delivery.
    private func nextFrameEvent() throws -> AMQPEvent? {
        var frame = amqp_frame_t()
        var zero = timeval(tv_sec: 0, tv_usec: 0)
        let status = amqp_simple_wait_frame_noblock(state, &frame, &zero)
        if status == AMQP_STATUS_TIMEOUT.rawValue { return nil }
        try check(status: status, "receive from the broker")
        guard frame.frame_type == AMQP_FRAME_METHOD else { return nil }
        let method = frame.payload.method
        let channel = frame.channel
        switch method.id {
        case AMQP_BASIC_ACK_METHOD:
            let ack = method.decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            return .confirm(channel: channel, deliveryTag: ack.delivery_tag, multiple: ack.multiple != 0, ack: true)
        case AMQP_BASIC_NACK_METHOD:
            let nack = method.decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            return .confirm(channel: channel, deliveryTag: nack.delivery_tag, multiple: nack.multiple != 0, ack: false)
        case AMQP_BASIC_RETURN_METHOD:
            let ret = method.decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
            var message = amqp_message_t()
            try check(amqp_read_message(state, channel, &message, 0), "read a returned message", channel: channel)
            defer { amqp_destroy_message(&message) }
            return .returned(
                channel: channel, replyCode: ret.reply_code, replyText: CDecode.string(ret.reply_text),
                exchange: CDecode.string(ret.exchange), routingKey: CDecode.string(ret.routing_key),
                messageID: MessageProperties(message.properties).messageID)
        case AMQP_BASIC_CANCEL_METHOD:
            let cancel = method.decoded.assumingMemoryBound(to: amqp_basic_cancel_t.self).pointee
            return .consumerCancelled(channel: channel, consumerTag: CDecode.string(cancel.consumer_tag))
        case AMQP_CHANNEL_CLOSE_METHOD:
            return .channelClosed(serverError(method, action: "use the channel", channel: channel))
        case AMQP_CONNECTION_CLOSE_METHOD:
            throw serverError(method, action: "use the connection", channel: 0)
        case AMQP_CONNECTION_BLOCKED_METHOD:
            let blocked = method.decoded.assumingMemoryBound(to: amqp_connection_blocked_t.self).pointee
            return .blocked(reason: CDecode.string(blocked.reason))
        case AMQP_CONNECTION_UNBLOCKED_METHOD:
            return .unblocked
        default:
            return nil
        }
    }

    /// Blocks until the socket is readable, `wakeUp` was signalled, or `timeout` passed; returns at once when
    /// librabbitmq already holds buffered input.
    ///
    /// Sleeps in `poll`: no CPU is spent while nothing happens. Sends held output (``holdOutput()``) first.
    /// - Returns: `false` when only `wakeUp` ended the wait: nothing came from the broker, and ``nextEvent()``
    ///   would find nothing (a caller may skip it until the next wait says otherwise).
    @discardableResult
    public func waitForActivity(wakeUp: WakeUpSignal?, timeout: Duration) -> Bool {
        // Closed: the next call says so at once.
        if !isOpen || hasBufferedInput { return true }
        flushOutput()
        var fds = [pollfd(fd: socketDescriptor, events: Int16(POLLIN), revents: 0)]
        if let wakeUp { fds.append(pollfd(fd: wakeUp.descriptor, events: Int16(POLLIN), revents: 0)) }
        let parts = timeout.components
        let milliseconds = Int32(clamping: parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
        _ = poll(&fds, nfds_t(fds.count), max(milliseconds, 0))
        let wokenUp = fds.count > 1 && fds[1].revents != 0
        if wokenUp { wakeUp?.reset() }
        return !wokenUp || fds[0].revents != 0
    }
}
