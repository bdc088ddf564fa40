import AMQP
import Foundation

/// Reads results from the stream that keeps them (`warren.results`), oldest first. Reading removes nothing: any
/// number of readers each see every result, and a reader can start where an earlier one stopped
/// (``Start/offset(_:)``).
///
/// ```swift
/// let reader = try ResultReader(url: url, from: .since(Date(timeIntervalSinceNow: -600)))
/// while case .result(let result, _)? = try reader.next(waitingUpTo: .seconds(1)) { print(result) }
/// ```
///
/// Thread safety: confined: use it from the thread that created it.
public final class ResultReader {
    /// Where in the stream reading starts.
    public enum Start: Sendable, Equatable {
        /// The oldest result the stream still keeps.
        case first
        /// Only results stored from now on.
        case next
        /// The stored message at this stream offset (as ``Event/result(_:offset:)`` reports it), and those after it.
        case offset(UInt64)
        /// Results stored at or after this instant (to the second: the broker keeps whole-second timestamps).
        case since(Date)

        var argument: AMQPFieldValue {
            switch self {
            case .first: "first"
            case .next: "next"
            case .offset(let offset): .int(Int64(clamping: offset))
            case .since(let date): .timestamp(UInt64(max(0, date.timeIntervalSince1970.rounded(.down))))
            }
        }
    }

    /// What the reader returns.
    public enum Event: Sendable {
        /// A stored result, or the error that says why it is unreadable (never dropped silently), with the stream
        /// offset of the message that holds it: the results a worker stored together, in one message, share one.
        case result(Result<JobResult, WarrenError>, offset: UInt64?)
        /// A progress report of a running job (only with `progress: true`).
        case progress(ProgressMessage)
    }

    static let channel: UInt16 = 1
    /// The channel of a reader that ends where the stream ended as it started: a second consumer, from the next
    /// message stored, whose first delivery gives the offset past which the stream was written after the start.
    static let endChannel: UInt16 = 2
    /// Results the broker sends ahead of ``next(waitingUpTo:)``: a stream consumer must have a prefetch.
    static let prefetch: UInt16 = 500
    let connection: AMQPConnection
    private let pump: AMQPEventPump
    /// What the broker sent that ``next(waitingUpTo:)`` has not returned yet, oldest first.
    private var pending: ArraySlice<Event> = []
    /// The offset of the first message stored after the reader started, once one was (with `endingNow`).
    private var endOffset: UInt64?
    /// Whether the reader read every message stored before it started, and will return no more (`endingNow`).
    public private(set) var reachedEnd = false

    /// Connects, declares the results stream and starts reading it at `start`.
    /// - Parameters:
    ///   - url: The broker URL; several, separated by commas, are tried in turn.
    ///   - start: Where to start. Default: the oldest kept result.
    ///   - progress: Also return progress reports of running jobs, from now on (they are not stored).
    ///   - endingNow: Read only what was stored before the reader started: once it comes to a message stored
    ///     later, ``next(waitingUpTo:)`` returns `nil` at once and ``reachedEnd`` is set. A reader of everything
    ///     stored so far thus ends while results keep coming. Not with `progress`.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL, `broker` when the connection fails).
    public init(url: String, from start: Start = .first, progress: Bool = false, endingNow: Bool = false) throws {
        connection = try Self.connect(
            BrokerAddresses(url, connectionName: "warren results"), start, progress, endingNow)
        pump = AMQPEventPump(connection)
        pump.route(Self.channel) { [unowned self] in try received($0) }
        pump.route(Self.endChannel) { [unowned self] in endOffset = endOffset ?? $0.streamOffset }
    }

    /// Connects and starts reading; tries again on a new connection while the stream is still starting, which it is
    /// when this reader, or a worker starting at the same moment, has only just declared it, or the broker has just
    /// restarted (``AMQPError/retryingWhileStreamStarts(timeout:_:)``).
    private static func connect(
        _ brokers: BrokerAddresses, _ start: Start, _ progress: Bool, _ endingNow: Bool
    ) throws -> AMQPConnection {
        do {
            return try AMQPError.retryingWhileStreamStarts {
                let connection = try brokers.connect()
                do {
                    try read(on: connection, from: start, progress: progress, endingNow: endingNow)
                    return connection
                } catch {
                    connection.close()
                    throw error
                }
            }
        } catch let error as AMQPError {
            throw WarrenError(broker: error)
        }
    }

    private static func read(on connection: AMQPConnection, from start: Start, progress: Bool, endingNow: Bool) throws {
        try connection.openChannel(Self.channel)
        // Declared only if missing: a reader that finds them needs no permission to configure them.
        if try Topology.lookUp(Topology.resultsStream, on: connection) == nil {
            try Topology.declareResults(on: connection, channel: Self.channel)
        }
        if endingNow {
            // Before the reading consumer: what it reads from here on may have been stored after the start. One
            // delivery is enough; it is never acknowledged, so the broker sends no other.
            try connection.openChannel(Self.endChannel)
            try connection.qos(prefetchCount: 1, channel: Self.endChannel)
            try connection.consume(
                Topology.resultsStream, arguments: ["x-stream-offset": Start.next.argument], channel: Self.endChannel)
        }
        try connection.qos(prefetchCount: Self.prefetch, channel: Self.channel)
        try connection.consume(
            Topology.resultsStream, arguments: ["x-stream-offset": start.argument], channel: Self.channel)
        if progress {
            if try !Topology.exchangeExists(Topology.progressExchange, on: connection) {
                try Topology.declareProgress(on: connection, channel: Self.channel)
            }
            let queue = try connection.declareQueue(
                "", durable: false, exclusive: true, autoDelete: true, channel: Self.channel
            ).name
            try connection.bindQueue(queue, to: Topology.progressExchange, routingKey: "#", channel: Self.channel)
            try connection.consume(queue, noAck: true, channel: Self.channel)
        }
    }

    /// Waits up to `timeout` for the next result (or progress report); `nil` when none came in that time, which,
    /// for a reader that started in the past, means it has read everything stored so far.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func next(waitingUpTo timeout: Duration) throws -> Event? {
        if let event = pending.popFirst() { return event }
        guard !reachedEnd else { return nil }
        do {
            try pump.dispatch(until: .now + timeout) { !pending.isEmpty || reachedEnd }
        } catch let error as AMQPError {
            throw WarrenError(broker: error)
        }
        return pending.popFirst()
    }

    /// Takes a delivery of the results stream or a progress report into ``pending``; notes the end of what a reader
    /// `endingNow` reads.
    private func received(_ delivery: Delivery) throws {
        guard !reachedEnd else { return }
        if delivery.exchange == Topology.progressExchange {
            if let report = try? ProgressMessage.decode(delivery.body) { pending.append(.progress(report)) }
            return
        }
        // Stream consumers acknowledge to get more deliveries; the ack removes nothing.
        try connection.ack(delivery.deliveryTag, multiple: true, channel: Self.channel)
        let offset = delivery.streamOffset
        if let offset, let endOffset, offset >= endOffset {
            reachedEnd = true
            return
        }
        pending += ResultBatch.results(in: delivery.body, type: delivery.properties.type)
            .map { .result($0, offset: offset) }
    }

    /// Closes the connection.
    public func close() {
        connection.close()
    }
}

extension Delivery {
    /// The offset of a message delivered from a stream (its `x-stream-offset` header).
    var streamOffset: UInt64? {
        properties.headers?[Topology.streamOffsetHeader]?.intValue.flatMap { UInt64(exactly: $0) }
    }
}
