/// Reads what the broker sends on a connection and hands each event to the handler of its channel.
///
/// ```swift
/// let pump = AMQPEventPump(connection)
/// let jobs = ConfirmChannel<String>(1, on: connection)
/// try jobs.open()
/// pump.route(1, to: jobs)
/// pump.route(2) { delivery in print(delivery.body.count) }
/// try jobs.publish(body, exchange: "", routingKey: "work", awaiting: "job-1")
/// let answered = try pump.dispatch(until: .now + .seconds(30)) { jobs.awaiting.isEmpty }
/// ```
///
/// Handlers are found in an array indexed by channel number: routing an event costs no lookup by key and no
/// allocation. Connection events (`connection.blocked`, `connection.unblocked`) go to ``blockingHandler``.
/// An event for a channel without a handler is dropped, but for a channel close, which is thrown.
///
/// The pump holds its handlers strongly: a closure that refers to the pump's owner should capture it `unowned`.
///
/// Thread safety: confined, like its connection: use it on the thread that owns the connection.
public final class AMQPEventPump {
    /// The connection whose events the pump reads.
    private let source: any EventSource
    /// Handlers by channel number.
    private var handlers: [(any AMQPChannelHandler)?] = []
    /// Called with the reason of `connection.blocked`, and with `nil` for `connection.unblocked`. Default: none.
    public var blockingHandler: ((_ reason: String?) throws -> Void)?

    /// The most events ``dispatch(atMost:)`` handles in one call by default.
    public static let defaultBatch = 512

    /// A pump for `connection`, with no handler yet.
    public init(_ connection: AMQPConnection) {
        source = connection
    }

    /// A pump that reads `source`: a connection, or a script of events in a test.
    init(source: any EventSource) {
        self.source = source
    }

    /// Hands the events of `channel` to `handler`, in place of the handler it had.
    public func route(_ channel: UInt16, to handler: any AMQPChannelHandler) {
        let index = Int(channel)
        if handlers.count <= index { handlers += Array(repeating: nil, count: index + 1 - handlers.count) }
        handlers[index] = handler
    }

    /// Hands the deliveries of `channel` to `body`; its channel close is thrown, its other events dropped.
    public func route(_ channel: UInt16, deliveries body: @escaping (Delivery) throws -> Void) {
        route(channel, to: ChannelRoute(onDelivery: body))
    }

    /// Drops the handler of `channel`: its events are dropped from now on, and its close thrown.
    public func removeRoute(_ channel: UInt16) {
        guard Int(channel) < handlers.count else { return }
        handlers[Int(channel)] = nil
    }

    /// The handler of `channel`, if it has one.
    public func handler(of channel: UInt16) -> (any AMQPChannelHandler)? {
        Int(channel) < handlers.count ? handlers[Int(channel)] : nil
    }

    /// Handles what the broker sent, without blocking: reads the socket once, then what librabbitmq holds.
    ///
    /// Reading on until a read finds nothing would cost a system call for nothing: bytes that arrive meanwhile end
    /// the next ``AMQPConnection/waitForActivity(wakeUp:timeout:)`` at once.
    /// - Parameter limit: The most events to handle, so that a flood of them leaves the caller its turn.
    /// - Returns: How many events were handled.
    /// - Throws: What a handler throws; ``AMQPError`` when the connection fails or the broker closes it.
    @discardableResult
    public func dispatch(atMost limit: Int = defaultBatch) throws -> Int {
        var handled = 0
        while handled < limit, handled == 0 || source.hasBufferedInput, let event = try source.nextEvent() {
            handled += 1
            try route(event)
        }
        return handled
    }

    /// Handles what the broker sends until `isDone` returns `true` or `deadline` passes, waiting on the socket in
    /// between. Checks `isDone` first, and again after each batch of events and each wait.
    /// - Parameter wakeUp: Also ends a wait, so that `isDone` can look at what another thread asked for.
    /// - Returns: Whether `isDone` returned `true`; `false` once `deadline` passed.
    /// - Throws: What `isDone` or a handler throws; ``AMQPError`` when the connection fails.
    @discardableResult
    public func dispatch(
        until deadline: ContinuousClock.Instant, wakeUp: WakeUpSignal? = nil, isDone: () throws -> Bool
    ) throws -> Bool {
        while try !isDone() {
            if try dispatch() > 0 { continue }
            let left = deadline - .now
            guard left > .zero else { return false }
            // At least once a second: librabbitmq sends and checks heartbeats only within a call.
            source.waitForActivity(wakeUp: wakeUp, timeout: min(left, .seconds(1)))
        }
        return true
    }

    /// Hands `event` to the handler of its channel, or to ``blockingHandler``.
    /// - Throws: What the handler throws; the error of a channel close that no handler takes.
    public func route(_ event: AMQPEvent) throws {
        switch event {
        case .delivery(let delivery):
            try handler(of: delivery.channel)?.delivered(delivery)
        case .confirm(let channel, let number, let multiple, let ack):
            try handler(of: channel)?.confirmed(upTo: number, multiple: multiple, ack: ack)
        case .returned(let channel, let replyCode, let replyText, let exchange, let routingKey, let messageID):
            try handler(of: channel)?.returned(
                ReturnedMessage(
                    replyCode: replyCode, replyText: replyText, exchange: exchange, routingKey: routingKey,
                    messageID: messageID))
        case .consumerCancelled(let channel, let consumerTag):
            try handler(of: channel)?.consumerCancelled(consumerTag)
        case .channelClosed(let error):
            guard let handler = error.channel.flatMap(handler(of:)) else { throw error }
            try handler.channelClosed(error)
        case .blocked(let reason):
            try blockingHandler?(reason)
        case .unblocked:
            try blockingHandler?(nil)
        }
    }
}

/// Where a pump reads events: an ``AMQPConnection``.
protocol EventSource: AnyObject {
    var hasBufferedInput: Bool { get }
    func nextEvent() throws -> AMQPEvent?
    @discardableResult func waitForActivity(wakeUp: WakeUpSignal?, timeout: Duration) -> Bool
}

extension AMQPConnection: EventSource {}
