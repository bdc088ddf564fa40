/// A channel in confirm mode: each publish returns its sequence number, and the broker's answers come back with
/// what the caller published it with.
///
/// ```swift
/// let jobs = ConfirmChannel<String>(1, on: connection)
/// try jobs.open()
/// pump.route(1, to: jobs)
/// try jobs.publish(body, exchange: "", routingKey: "work", mandatory: true, awaiting: "job-1")
/// try pump.dispatch(until: .now + .seconds(30)) { jobs.awaiting.isEmpty }
/// for answer in jobs.takeAnswers() where !answer.isAck { print("refused:", answer.payload) }
/// ```
///
/// Routed to it by an ``AMQPEventPump``, the channel keeps the broker's answers (``takeAnswers()``) and the
/// messages it returned (``takeReturns()``) until its owner takes them. A channel close marks it closed and is
/// thrown. An owner that handles closes itself, or consumes on the channel too, routes the channel to a
/// ``ChannelRoute`` of its own whose `onConfirm` forwards to ``confirmed(upTo:multiple:ack:)``.
///
/// The broker numbers a channel's publishes from 1, again each time the channel opens: ``reopen()`` starts the
/// numbering again and hands back the publishes left unanswered.
///
/// Its publish and answer paths are `@inlinable`, so that a client module specializes them for its payload.
///
/// Thread safety: confined, like its connection.
public final class ConfirmChannel<Payload>: AMQPChannelHandler {
    /// An answer of the broker, with its publish's payload.
    public typealias Answer = ConfirmTracker<Payload>.Answer

    /// The channel's number on its connection.
    public let channel: UInt16
    /// The connection the channel belongs to.
    public let connection: AMQPConnection
    /// Whether the channel is open: opened (``open()``), and neither closed since nor closed by the broker.
    public private(set) var isOpen = false
    /// The sequence number of the channel's last publish: the number of publishes since it opened.
    @inlinable public var lastSequenceNumber: UInt64 { published }
    /// The publishes that wait for the broker's answer.
    @inlinable public var awaiting: ConfirmTracker<Payload> { tracker }
    /// The number of publishes since the channel opened.
    @usableFromInline var published: UInt64 = 0
    /// The publishes that wait for the broker's answer.
    @usableFromInline var tracker = ConfirmTracker<Payload>()
    /// Answers not taken yet, in the order they came.
    @usableFromInline var answers: [Answer] = []
    /// Returned messages not taken yet, in the order they came.
    private var returns: [ReturnedMessage] = []

    /// Takes in an answer routed to the channel by a pump. Made where the channel is made, so that the client
    /// module specializes it for its payload: the pump calls the channel through its protocol, unspecialized.
    @usableFromInline var takeAnswer: ((_ number: UInt64, _ multiple: Bool, _ ack: Bool) -> Void)?

    /// A channel of `connection`, closed until ``open()``.
    @inlinable
    public init(_ channel: UInt16, on connection: AMQPConnection) {
        self.channel = channel
        self.connection = connection
        takeAnswer = { [unowned self] number, multiple, ack in
            tracker.answer(upTo: number, multiple: multiple, ack: ack) { answers.append($0) }
        }
    }

    /// Opens the channel and puts it in confirm mode; its publishes are numbered from 1.
    /// - Returns: The publishes left unanswered when the channel closed before, if it did: no answer comes now.
    /// - Throws: ``AMQPError`` when the broker refuses or the connection fails.
    @discardableResult
    public func open() throws -> [(number: UInt64, payload: Payload)] {
        let unanswered = tracker.removeAll()
        published = 0
        try connection.openChannel(channel)
        isOpen = true
        try connection.enableConfirms(channel: channel)
        return unanswered
    }

    /// Closes the channel politely, unless it is closed already. Publishes that wait stay in ``awaiting``, until
    /// the channel opens again.
    /// - Throws: ``AMQPError`` when the connection fails.
    public func close() throws {
        guard isOpen else { return }
        isOpen = false
        try connection.closeChannel(channel)
    }

    /// Closes the channel if it is open, then opens it afresh, its publishes numbered from 1 again.
    /// - Returns: The publishes left unanswered: no answer comes now.
    /// - Throws: ``AMQPError`` when the broker refuses or the connection fails.
    @discardableResult
    public func reopen() throws -> [(number: UInt64, payload: Payload)] {
        try close()
        return try open()
    }

    /// Publishes a message whose answer is awaited with `payload`, and returns its sequence number.
    ///
    /// The number is counted only once the message is handed to the connection: a publish that throws takes none.
    /// - Parameter mandatory: Have the broker return the message (``takeReturns()``) when no queue takes it.
    /// - Throws: ``AMQPError`` when the connection fails or librabbitmq cannot encode the message.
    @inlinable @discardableResult
    public func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties = MessageProperties(),
        mandatory: Bool = false, awaiting payload: Payload
    ) throws -> UInt64 {
        try connection.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, mandatory: mandatory,
            channel: channel)
        published += 1
        tracker.track(published, payload)
        return published
    }

    /// The broker's answers since the last call, in the order they came; each answer in number order.
    @inlinable
    public func takeAnswers() -> [Answer] {
        defer { answers = [] }
        return answers
    }

    /// The messages the broker returned since the last call, in the order they came.
    public func takeReturns() -> [ReturnedMessage] {
        defer { returns = [] }
        return returns
    }

    /// Takes in the broker's answer, for ``takeAnswers()``.
    public func confirmed(upTo number: UInt64, multiple: Bool, ack: Bool) {
        takeAnswer?(number, multiple, ack)
    }

    /// Takes in the broker's answer and hands each publish it covers to `body` at once, in number order, instead of
    /// keeping them for ``takeAnswers()``: for a ``ChannelRoute`` whose `onConfirm` settles what was published.
    ///
    /// Each publish is taken out just before `body` sees it: when `body` throws, the ones after stay awaited.
    @inlinable
    public func answer(
        upTo number: UInt64, multiple: Bool, ack: Bool, each body: (Answer) throws -> Void
    ) rethrows {
        try tracker.answer(upTo: number, multiple: multiple, ack: ack, each: body)
    }

    /// Keeps a returned message, for ``takeReturns()``.
    public func returned(_ message: ReturnedMessage) {
        returns.append(message)
    }

    /// Marks the channel closed, then throws `error`.
    public func channelClosed(_ error: AMQPError) throws {
        isOpen = false
        throw error
    }
}

extension ConfirmChannel where Payload == Void {
    /// Publishes a message whose answer is awaited, and returns its sequence number.
    @inlinable @discardableResult
    public func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties = MessageProperties(),
        mandatory: Bool = false
    ) throws -> UInt64 {
        try publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, mandatory: mandatory,
            awaiting: ())
    }
}
