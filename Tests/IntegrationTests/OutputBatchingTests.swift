import AMQP
import Foundation
import Glibc
import Testing

/// Held output (`TCP_CORK`) never outlives a wait: every request that waits for the broker's reply, and every wait
/// for activity, sends what was held first; otherwise the broker would see the request only when the kernel gives
/// up holding (200 ms), or a worker would sleep on results it never sent.
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
                ("declareExchange", { try connection.declareExchange(exchange, type: "fanout", durable: false, channel: 1) }),
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
                #expect(!Self.isCorked(connection), "output held before anything was published")
                // Held from the first publish on. No queue has that name: the broker drops the message.
                try connection.publish([], exchange: "", routingKey: "no-such-queue-\(queue)", channel: 1)
                #expect(Self.isCorked(connection), "holdOutput did not hold the publish before \(name)")
                try request()
                #expect(!Self.isCorked(connection), "\(name) left output held")
            }
        }

        @Test("messages published while output is held all arrive once it is sent")
        func heldPublishesArrive() throws {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            let queue = TestEnvironment.uniqueName("held")
            try connection.openChannel(1)
            try connection.declareQueue(queue, durable: false, autoDelete: false, channel: 1)
            defer { _ = try? connection.deleteQueue(queue, channel: 1) }
            try connection.enableConfirms(channel: 1)
            connection.holdOutput()
            for index in 0..<50 {
                try connection.publish(Array("message \(index)".utf8), exchange: "", routingKey: queue, channel: 1)
            }
            connection.flushOutput()
            #expect(!Self.isCorked(connection))
            var confirmed: UInt64 = 0
            let deadline = ContinuousClock.now + .seconds(10)
            while confirmed < 50, ContinuousClock.now < deadline {
                guard let event = try connection.nextEvent() else {
                    connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
                    continue
                }
                if case .confirm(_, let tag, let multiple, true) = event { confirmed = multiple ? tag : max(confirmed, tag) }
            }
            #expect(confirmed == 50)
            var bodies: [String] = []
            while let delivery = try connection.get(queue, noAck: true, channel: 1) {
                bodies.append(String(decoding: delivery.body, as: UTF8.self))
            }
            #expect(bodies == (0..<50).map { "message \($0)" })
        }

        /// Whether the kernel holds the connection's output (`TCP_CORK` set on its socket).
        private static func isCorked(_ connection: AMQPConnection) -> Bool {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            let status = getsockopt(connection.socketDescriptor, Int32(IPPROTO_TCP), TCP_CORK, &value, &length)
            return status == 0 && value != 0
        }
    }
}
