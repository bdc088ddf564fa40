internal import CRabbitMQ

/// Channels, exchanges, queues and bindings. Each method sends its request and checks its reply on the calling
/// (owning) thread.
extension AMQPConnection {
    /// What `queue.declare` answered.
    public struct QueueInfo: Sendable {
        /// The queue's name (the broker picks one when the declared name was empty).
        public var name: String
        public var messageCount: UInt32
        public var consumerCount: UInt32
    }

    /// Opens `channel` (1...2047).
    public func openChannel(_ channel: UInt16) throws {
        try checkOpen("open channel \(channel)")
        flushOutput()
        amqp_channel_open(state, channel)
        try check(amqp_get_rpc_reply(state), "open channel \(channel)", channel: channel)
    }

    /// Closes `channel` politely.
    public func closeChannel(_ channel: UInt16) throws {
        try checkOpen("close channel \(channel)")
        flushOutput()
        try check(amqp_channel_close(state, channel, AMQP_REPLY_SUCCESS), "close channel \(channel)", channel: channel)
    }

    /// Declares an exchange (`direct`, `fanout`, `topic` or `headers`). With `passive`, only checks that it exists
    /// (the broker closes the channel with 404 if not).
    public func declareExchange(
        _ name: String, type: String, durable: Bool = true, autoDelete: Bool = false, passive: Bool = false,
        arguments: AMQPTable = [:], channel: UInt16
    ) throws {
        try checkOpen("declare exchange '\(name)'")
        flushOutput()
        let arena = CArena()
        amqp_exchange_declare(
            state, channel, arena.bytes(name), arena.bytes(type), passive ? 1 : 0, durable ? 1 : 0,
            autoDelete ? 1 : 0, 0, arena.table(arguments))
        try check(amqp_get_rpc_reply(state), "declare exchange '\(name)'", channel: channel)
    }

    /// Declares a queue; an empty name asks the broker for a fresh one. With `passive`, only checks that it exists.
    @discardableResult
    public func declareQueue(
        _ name: String, durable: Bool = true, exclusive: Bool = false, autoDelete: Bool = false,
        passive: Bool = false, arguments: AMQPTable = [:], channel: UInt16
    ) throws -> QueueInfo {
        try checkOpen("declare queue '\(name)'")
        flushOutput()
        let arena = CArena()
        let ok = amqp_queue_declare(
            state, channel, arena.bytes(name), passive ? 1 : 0, durable ? 1 : 0, exclusive ? 1 : 0,
            autoDelete ? 1 : 0, arena.table(arguments))
        // A server-named queue (an empty name) is named for what it is.
        let queue = name.isEmpty ? "a server-named queue" : "queue '\(name)'"
        try check(amqp_get_rpc_reply(state), "declare \(queue)", channel: channel)
        guard let ok else { throw AMQPError(.library, "declare \(queue): no reply") }
        return QueueInfo(
            name: CDecode.string(ok.pointee.queue), messageCount: ok.pointee.message_count,
            consumerCount: ok.pointee.consumer_count)
    }

    /// Binds `queue` to `exchange` with `routingKey`.
    public func bindQueue(
        _ queue: String, to exchange: String, routingKey: String = "", arguments: AMQPTable = [:], channel: UInt16
    ) throws {
        try checkOpen("bind queue '\(queue)'")
        flushOutput()
        let arena = CArena()
        amqp_queue_bind(
            state, channel, arena.bytes(queue), arena.bytes(exchange), arena.bytes(routingKey), arena.table(arguments))
        try check(amqp_get_rpc_reply(state), "bind queue '\(queue)' to '\(exchange)'", channel: channel)
    }

    /// Removes the binding of `queue` to `exchange` with `routingKey`; nothing happens when there is none.
    public func unbindQueue(
        _ queue: String, from exchange: String, routingKey: String = "", arguments: AMQPTable = [:], channel: UInt16
    ) throws {
        try checkOpen("unbind queue '\(queue)'")
        flushOutput()
        let arena = CArena()
        amqp_queue_unbind(
            state, channel, arena.bytes(queue), arena.bytes(exchange), arena.bytes(routingKey), arena.table(arguments))
        try check(amqp_get_rpc_reply(state), "unbind queue '\(queue)' from '\(exchange)'", channel: channel)
    }

    /// Deletes a queue and returns how many messages it held.
    @discardableResult
    public func deleteQueue(_ queue: String, channel: UInt16) throws -> UInt32 {
        try checkOpen("delete queue '\(queue)'")
        flushOutput()
        let arena = CArena()
        let ok = amqp_queue_delete(state, channel, arena.bytes(queue), 0, 0)
        try check(amqp_get_rpc_reply(state), "delete queue '\(queue)'", channel: channel)
        return ok?.pointee.message_count ?? 0
    }

    /// Removes every ready message from a queue and returns how many there were.
    @discardableResult
    public func purgeQueue(_ queue: String, channel: UInt16) throws -> UInt32 {
        try checkOpen("purge queue '\(queue)'")
        flushOutput()
        let arena = CArena()
        let ok = amqp_queue_purge(state, channel, arena.bytes(queue))
        try check(amqp_get_rpc_reply(state), "purge queue '\(queue)'", channel: channel)
        return ok?.pointee.message_count ?? 0
    }

    /// Limits unacknowledged deliveries: per consumer created after this call, or per channel with `global`.
    public func qos(prefetchCount: UInt16, global: Bool = false, channel: UInt16) throws {
        try checkOpen("set prefetch \(prefetchCount)")
        flushOutput()
        amqp_basic_qos(state, channel, 0, prefetchCount, global ? 1 : 0)
        try check(amqp_get_rpc_reply(state), "set prefetch \(prefetchCount)", channel: channel)
    }

    /// Puts `channel` in confirm mode: the broker then confirms each publish with an ``AMQPEvent/confirm``,
    /// numbered from 1 in publish order.
    public func enableConfirms(channel: UInt16) throws {
        try checkOpen("enable publisher confirms")
        flushOutput()
        amqp_confirm_select(state, channel)
        try check(amqp_get_rpc_reply(state), "enable publisher confirms", channel: channel)
    }
}
