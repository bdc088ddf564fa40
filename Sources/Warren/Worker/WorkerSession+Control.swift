import AMQP
import Foundation

/// Control messages: cancellations reach jobs wherever they are, including jobs not yet delivered.
extension WorkerSession {
    /// Consumes the control stream from its start (a day of control messages), and reads it up to a marker this
    /// worker publishes, so that every cancellation sent before it started is known before its first job arrives.
    func consumeControl() throws {
        try connection.openChannel(Self.controlChannel)
        try Topology.declareControl(on: connection, channel: Self.controlChannel)
        try connection.qos(prefetchCount: 500, channel: Self.controlChannel)
        try connection.consume(
            Topology.controlStream, arguments: ["x-stream-offset": "first"], channel: Self.controlChannel)
        let token = UUID().uuidString
        _ = try publish(
            try ControlMessage.sync(token: token).encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true))
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            while let event = try connection.nextEvent() {
                switch event {
                case .delivery(let delivery) where delivery.channel == Self.controlChannel:
                    if try handleControl(delivery) == token { return }
                case .channelClosed(let error):
                    throw error
                default:
                    break
                }
            }
            connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
        }
        logger.warning("did not read the control stream to its end within 30 s; starting anyway")
    }

    /// Applies a control message; returns the token of a `sync` marker.
    @discardableResult
    func handleControl(_ delivery: Delivery) throws -> String? {
        try connection.ack(delivery.deliveryTag, channel: Self.controlChannel)
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
        switch message.kind {
        case "cancel":
            cancellations.record(message)
            for job in inFlight.values {
                guard let cancellation = cancellations.cancellation(of: job.descriptor) else { continue }
                job.operation.job.logger.info("cancelling job", metadata: ["reason": "\(cancellation.reason)"])
                job.operation.cancel(cancellation)
            }
        case "sync":
            return message.token
        default:
            logger.warning("ignoring control message of unknown kind '\(message.kind)'")
        }
        return nil
    }
}
