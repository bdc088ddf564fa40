import AMQP
import Foundation
import Glibc
import Testing

/// Held output (publishes and acks encoded into one buffer and sent with one `send`) never outlives a wait: every
/// request that waits for the broker's reply, and every wait for activity, sends what was held first; otherwise
/// the broker would never see the request, or a worker would sleep on results it never sent. What is held arrives
/// as librabbitmq would have sent it.
extension Integration {
    @Suite struct OutputBatching {
        @Test("every request that waits for a reply, and every wait, sends held output first")
        func heldOutputIsSentBeforeEveryWait() throws {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            let queue = TestEnvironment.uniqueName("held")
            let exchange = TestEnvironment.uniqueName("held-exchange")
            var consumerTag = ""
            try connection.openChannel(1)
            let requests: [(String, () throws -> Void)] = [
                ("declareQueue", { try connection.declareQueue(queue, durable: false, channel: 1) }),
                (
                    "declareExchange",
                    { try connection.declareExchange(exchange, type: "fanout", durable: false, channel: 1) }
                ),
                ("bindQueue", { try connection.bindQueue(queue, to: exchange, channel: 1) }),
                ("unbindQueue", { try connection.unbindQueue(queue, from: exchange, channel: 1) }),
                ("qos", { try connection.qos(prefetchCount: 5, channel: 1) }),
                ("get", { _ = try connection.get(queue, channel: 1) }),
                ("purgeQueue", { try connection.purgeQueue(queue, channel: 1) }),
                ("consume", { consumerTag = try connection.consume(queue, channel: 1) }),
                ("cancelConsumer", { try connection.cancelConsumer(consumerTag, channel: 1) }),
                ("waitForActivity", { connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(1)) }),
                ("openChannel", { try connection.openChannel(2) }),
                ("enableConfirms", { try connection.enableConfirms(channel: 2) }),
                ("closeChannel", { try connection.closeChannel(2) }),
                ("deleteQueue", { try connection.deleteQueue(queue, channel: 1) }),
            ]
            for (name, request) in requests {
                connection.holdOutput()
                // No queue has that name: the broker drops the message.
                try connection.publish([], exchange: "", routingKey: "no-such-queue-\(queue)", channel: 1)
                #expect(connection.heldByteCount > 0, "holdOutput did not hold the publish before \(name)")
                try request()
                #expect(connection.heldByteCount == 0, "\(name) left output held")
            }
        }

        @Test("messages published while output is held all arrive once it is sent")
        func heldPublishesArrive() throws {
            try Self.withQueue("held") { connection, queue in
                try connection.enableConfirms(channel: 1)
                connection.holdOutput()
                for index in 0..<50 {
                    try connection.publish(Array("message \(index)".utf8), exchange: "", routingKey: queue, channel: 1)
                }
                #expect(connection.heldByteCount > 0)
                connection.flushOutput()
                #expect(connection.heldByteCount == 0)
                var confirmed: UInt64 = 0
                try Self.readEvents(connection) { event in
                    if case .confirm(_, let tag, let multiple, true) = event {
                        confirmed = multiple ? tag : max(confirmed, tag)
                    }
                    return confirmed == 50
                }
                #expect(confirmed == 50)
                var bodies: [String] = []
                while let delivery = try connection.get(queue, noAck: true, channel: 1) {
                    bodies.append(String(decoding: delivery.body, as: UTF8.self))
                }
                #expect(bodies == (0..<50).map { "message \($0)" })
            }
        }

        @Test("held publishes keep their bodies, properties and order, a large body too; held acks and nacks settle")
        func heldFramesAreWhatLibrabbitmqWouldSend() throws {
            try Self.withQueue("held-frames") { connection, queue in
                // The largest body copied into the held output, then one librabbitmq sends itself after what is
                // held (three body frames: larger than the negotiated frame size, 128 KiB), then a held one again.
                let largestHeld = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
                let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
                let properties = MessageProperties(
                    contentType: "application/json", headers: ["attempt": .int(2), "origin": .string("held")],
                    persistent: true, priority: 3, correlationID: "c-1", replyTo: "somewhere", messageID: "m-1",
                    timestamp: 1_700_000_000, type: "test.held", appID: "warren-tests")
                let bodies: [[UInt8]] = [[], Array("small".utf8), largestHeld, large, Array("after".utf8)]
                connection.holdOutput()
                for body in bodies.prefix(3) {
                    try connection.publish(body, exchange: "", routingKey: queue, properties: properties, channel: 1)
                }
                #expect(connection.heldByteCount > largestHeld.count)
                try connection.publish(bodies[3], exchange: "", routingKey: queue, properties: properties, channel: 1)
                #expect(connection.heldByteCount == 0, "what was held left before the large body")
                try connection.publish(bodies[4], exchange: "", routingKey: queue, properties: properties, channel: 1)
                #expect(connection.heldByteCount > 0, "output is still held after the large body")
                connection.flushOutput()
                try connection.consume(queue, channel: 1)
                var deliveries: [Delivery] = []
                try Self.readEvents(connection) { event in
                    if case .delivery(let delivery) = event { deliveries.append(delivery) }
                    return deliveries.count == bodies.count
                }
                #expect(deliveries.map(\.body) == bodies)
                #expect(deliveries.allSatisfy { $0.properties == properties })
                guard deliveries.count == bodies.count else { return }
                // Held: an ack of the second with `multiple` covers the first two; the fourth is requeued, the
                // third and fifth dropped.
                connection.holdOutput()
                try connection.ack(deliveries[1].deliveryTag, multiple: true, channel: 1)
                try connection.nack(deliveries[2].deliveryTag, requeue: false, channel: 1)
                try connection.nack(deliveries[3].deliveryTag, requeue: true, channel: 1)
                try connection.nack(deliveries[4].deliveryTag, requeue: false, channel: 1)
                connection.flushOutput()
                var redelivered: Delivery?
                try Self.readEvents(connection) { event in
                    if case .delivery(let delivery) = event { redelivered = delivery }
                    return redelivered != nil
                }
                #expect(redelivered?.redelivered == true)
                #expect(redelivered?.body == large)
            }
        }

        @Test("held output the socket refuses ends the connection: the next read reports it lost")
        func refusedHeldOutputLosesTheConnection() throws {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            connection.holdOutput()
            try connection.publish(Array("lost".utf8), exchange: "", routingKey: "no-such-queue", channel: 1)
            // The socket can no longer send: the write fails with EPIPE.
            shutdown(connection.socketDescriptor, Int32(SHUT_WR))
            connection.flushOutput()
            #expect(connection.heldByteCount == 0)
            let error = #expect(throws: AMQPError.self) { try Self.readEvents(connection) { _ in false } }
            #expect(error?.code == .connectionLost)
        }

        /// Runs `body` with a connection, channel 1 open, and a queue of its own.
        private static func withQueue(_ prefix: String, _ body: (AMQPConnection, String) throws -> Void) throws {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            let queue = TestEnvironment.uniqueName(prefix)
            try connection.openChannel(1)
            try connection.declareQueue(queue, durable: false, autoDelete: false, channel: 1)
            defer { _ = try? connection.deleteQueue(queue, channel: 1) }
            try body(connection, queue)
        }

        /// Hands the connection's events to `done` until it returns `true`, for 10 seconds at most.
        private static func readEvents(_ connection: AMQPConnection, until done: (AMQPEvent) -> Bool) throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                guard let event = try connection.nextEvent() else {
                    connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
                    continue
                }
                if done(event) { return }
            }
        }
    }
}
