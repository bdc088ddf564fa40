import AMQP
import Foundation
import Logging

/// The worker's reading of the `warren.control` stream: cancellations, pauses, resizes, status requests, crash
/// reports, each turned into a ``Command`` for the session to carry out.
///
/// Every worker reads every control message. At start-up it reads the stream from its start (a day of messages)
/// up to a marker it publishes itself, so that every cancellation sent before it started is known before its first
/// job arrives.
/// Thread safety: confined to the worker's broker thread.
final class ControlStream {
    /// What a control message asks of this worker.
    enum Command {
        /// Cancel the jobs the message names, wherever they are.
        case cancel(ControlMessage)
        /// Pause or resume taking jobs from queues this worker consumes.
        case setPaused(Bool, queues: [String])
        /// Set a local queue's width.
        case resize(localQueue: String?, width: Int?, toThisWorker: Bool)
        /// Answer a status request, listing up to `jobs` jobs if set.
        case status(replyTo: String, jobs: Int?)
        /// A worker died while executing jobs.
        case crashed(ControlMessage)
        /// A `sync` marker.
        case sync(token: String)
    }

    private let link: BrokerLink
    private let logger: Logger
    private let workerID: String
    private let queues: [String]
    /// Where in the stream this worker's start-up marker is: `resize` messages after it are for this worker's
    /// lifetime, those before it for workers before it.
    private var startOffset: UInt64?
    /// Whether the stream is being read from its start: the pauses and resumes read then are logged once, as
    /// where they leave the worker, not one by one.
    private(set) var readsBacklog = false

    init(link: BrokerLink, configuration: Worker.Configuration, logger: Logger) {
        self.link = link
        self.logger = logger
        workerID = configuration.workerID
        queues = configuration.queues
    }

    /// Consumes the stream from its start and reads it up to a marker this worker publishes, carrying out each
    /// command with `carryOut`, then and for the rest of the connection; gives up waiting for the marker after 30 s,
    /// or when `stopIsPending` says a stop came.
    func readToEnd(stopIsPending: () -> Bool, carryOut: @escaping (Command) throws -> Void) throws {
        readsBacklog = true
        defer { readsBacklog = false }
        let connection = link.connection
        try connection.openChannel(BrokerLink.Channel.control)
        try Topology.declareControl(on: connection, channel: BrokerLink.Channel.control)
        try connection.qos(prefetchCount: 500, channel: BrokerLink.Channel.control)
        try connection.consume(
            Topology.controlStream, arguments: ["x-stream-offset": "first"], channel: BrokerLink.Channel.control)
        let token = UUID().uuidString
        _ = try link.publish(
            try ControlMessage.sync(token: token).encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true))
        var reachedMarker = false
        // This route stays for the life of the connection: after the marker, each message is carried out as read.
        link.route(BrokerLink.Channel.control) { [unowned self] delivery in
            guard let command = try read(delivery) else { return }
            if case .sync(let found) = command, found == token {
                if startOffset == nil { startOffset = delivery.streamOffset }
                reachedMarker = true
                return
            }
            try carryOut(command)
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !reachedMarker, !stopIsPending() {
            try link.pump.dispatch(until: min(deadline, .now + .milliseconds(100))) { reachedMarker || stopIsPending() }
        }
        guard !reachedMarker, !stopIsPending() else { return }
        logger.warning("did not read the control stream to its end within 30 s; starting anyway")
    }

    /// Acknowledges a control message and says what it asks of this worker; `nil` when nothing.
    func read(_ delivery: Delivery) throws -> Command? {
        try link.connection.ack(delivery.deliveryTag, channel: BrokerLink.Channel.control)
        // Every worker reads every control message, again at each start for a day: one of tens of megabytes (a
        // million ids) would cost each of them hundreds of megabytes, and seconds at each start.
        guard delivery.body.count <= ControlMessage.maxBytes else {
            logger.warning(
                "ignoring a control message larger than \(ControlMessage.maxBytes) bytes",
                metadata: ["bytes": "\(delivery.body.count)"])
            return nil
        }
        let message: ControlMessage
        do {
            message = try WireCoding.decoder.decode(ControlMessage.self, from: Data(delivery.body))
        } catch {
            logger.warning("ignoring an unreadable control message", metadata: ["error": "\(error)"])
            return nil
        }
        guard message.version == WireCoding.version else {
            logger.warning("ignoring control message of version \(message.version)")
            return nil
        }
        return command(of: message, at: delivery.streamOffset)
    }

    /// What `message`, at `offset` in the stream, asks of this worker.
    func command(of message: ControlMessage, at offset: UInt64?) -> Command? {
        let forThisWorker = message.worker == nil || message.worker == workerID
        switch message.kind {
        case "cancel", "cancelAll":
            return .cancel(message)
        case "pause", "resume":
            guard forThisWorker else { return nil }
            let scope = (message.queue.map { [$0] } ?? queues).filter(queues.contains)
            return .setPaused(message.kind == "pause", queues: scope)
        case "resize":
            // Only those after this worker's start in the stream, whatever the clocks say: one started later keeps
            // its own widths, and one that reconnects reads the same ones again, in order, and ends where it was.
            guard forThisWorker, let start = startOffset, let offset, offset > start else { return nil }
            return .resize(localQueue: message.localQueue, width: message.width, toThisWorker: message.worker != nil)
        case "status":
            // A request replayed from the stream at start-up is long answered: only fresh ones get a reply.
            guard let replyTo = message.replyTo, message.isFresh else { return nil }
            // A reply the broker would refuse (or crash the channel on) costs the worker its connection, and the
            // request, replayed from the stream, would do it again.
            if let problem = message.replyToProblem {
                logger.warning("ignoring a status request: \(problem)")
                return nil
            }
            return .status(replyTo: replyTo, jobs: message.jobs)
        case "sync":
            return message.token.map { .sync(token: $0) }
        case "crashed":
            return .crashed(message)
        default:
            logger.warning("ignoring control message of unknown kind '\(message.kind)'")
            return nil
        }
    }
}
