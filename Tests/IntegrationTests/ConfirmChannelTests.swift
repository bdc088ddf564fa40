import AMQP
import Foundation
import Testing

extension Integration {
    @Suite struct ConfirmChannels {
        /// A connection to the test broker, with a pump and confirm channel 1 routed to it.
        private static func connect() throws -> (AMQPConnection, AMQPEventPump, ConfirmChannel<String>) {
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            let pump = AMQPEventPump(connection)
            let channel = ConfirmChannel<String>(1, on: connection)
            try channel.open()
            pump.route(1, to: channel)
            return (connection, pump, channel)
        }

        @Test("a confirm channel numbers its publishes from 1, again once reopened, and hands back their payloads")
        func numbering() throws {
            let queue = TestEnvironment.uniqueName("confirm-numbering")
            defer { BrokerProbe.delete(queue) }
            let (connection, pump, channel) = try Self.connect()
            defer { connection.close() }
            try connection.declareQueue(queue, durable: false, channel: 1)
            let numbers = try ["a", "b", "c"].map {
                try channel.publish(Array($0.utf8), exchange: "", routingKey: queue, awaiting: $0)
            }
            #expect(numbers == [1, 2, 3] && channel.lastSequenceNumber == 3)
            #expect(try pump.dispatch(until: .now + .seconds(30)) { channel.awaiting.isEmpty })
            let answers = channel.takeAnswers()
            #expect(answers.map(\.payload) == ["a", "b", "c"] && answers.allSatisfy { $0.isAck })
            #expect(channel.takeAnswers().isEmpty)

            try channel.publish([], exchange: "", routingKey: queue, awaiting: "unanswered")
            let left = try channel.reopen()
            #expect(left.map(\.payload) == ["unanswered"] && left.map(\.number) == [4])
            #expect(try channel.publish([], exchange: "", routingKey: queue, awaiting: "d") == 1)
            #expect(try pump.dispatch(until: .now + .seconds(30)) { channel.awaiting.isEmpty })
            #expect(channel.takeAnswers().map(\.payload) == ["d"])

            // Answers handed over as they come, for a route that settles them at once: none kept.
            var settled: [String] = []
            let route = ChannelRoute()
            route.onConfirm = { number, multiple, ack in
                channel.answer(upTo: number, multiple: multiple, ack: ack) { settled.append($0.payload) }
            }
            pump.route(1, to: route)
            for payload in ["e", "f"] { try channel.publish([], exchange: "", routingKey: queue, awaiting: payload) }
            #expect(try pump.dispatch(until: .now + .seconds(30)) { channel.awaiting.isEmpty })
            #expect(settled == ["e", "f"] && channel.takeAnswers().isEmpty)
        }

        @Test(
            "the broker's refusals and returns reach the publishes they concern, and a close of the channel is thrown")
        func refusalsAndReturns() throws {
            let full = TestEnvironment.uniqueName("confirm-full")
            let open = TestEnvironment.uniqueName("confirm-open")
            defer { [full, open].forEach(BrokerProbe.delete) }
            let (connection, pump, channel) = try Self.connect()
            defer { connection.close() }
            try connection.declareQueue(
                full, durable: false, arguments: ["x-max-length": 0, "x-overflow": "reject-publish"], channel: 1)
            try connection.declareQueue(open, durable: false, channel: 1)
            try channel.publish([], exchange: "", routingKey: open, awaiting: "taken")
            try channel.publish([], exchange: "", routingKey: full, awaiting: "refused")
            try channel.publish([], exchange: "", routingKey: open, awaiting: "taken too")
            try channel.publish(
                [], exchange: "", routingKey: TestEnvironment.uniqueName("nowhere"), mandatory: true,
                awaiting: "returned")
            #expect(try pump.dispatch(until: .now + .seconds(30)) { channel.awaiting.isEmpty })
            let answers = channel.takeAnswers().sorted { $0.number < $1.number }
            #expect(answers.map(\.payload) == ["taken", "refused", "taken too", "returned"])
            #expect(answers.map(\.isAck) == [true, false, true, true])
            #expect(channel.takeReturns().map(\.replyCode) == [312])

            // Publishing to an exchange that does not exist: the broker closes the channel.
            try channel.publish(
                [], exchange: TestEnvironment.uniqueName("no-exchange"), routingKey: "", awaiting: "lost")
            let closed = #expect(throws: AMQPError.self) {
                try pump.dispatch(until: .now + .seconds(30)) { !channel.isOpen }
            }
            #expect(closed?.replyCode == 404 && !channel.isOpen)
            #expect(try channel.open().map(\.payload) == ["lost"])
            #expect(try channel.publish([], exchange: "", routingKey: open, awaiting: "again") == 1)
        }
    }
}
