import Testing

@testable import AMQP

@Suite("AMQPEventPump")
struct AMQPEventPumpTests {
    /// Events as a connection would return them: `reads` holds what each read of the socket brings, and the events
    /// of a read after its first count as held by librabbitmq.
    private final class Script: EventSource {
        var reads: [[AMQPEvent]]
        private var buffered: [AMQPEvent] = []
        /// Calls to nextEvent() that read the socket, and waits.
        var socketReads = 0
        var waits = 0

        init(_ reads: [[AMQPEvent]]) {
            self.reads = reads
        }

        var hasBufferedInput: Bool { !buffered.isEmpty }

        func nextEvent() throws -> AMQPEvent? {
            if buffered.isEmpty {
                socketReads += 1
                guard !reads.isEmpty else { return nil }
                buffered = reads.removeFirst()
                if buffered.isEmpty { return nil }
            }
            return buffered.removeFirst()
        }

        func waitForActivity(wakeUp: WakeUpSignal?, timeout: Duration) -> Bool {
            waits += 1
            return true
        }
    }

    /// What a channel's handler saw, as text.
    private final class Recorder: AMQPChannelHandler {
        var seen: [String] = []

        func delivered(_ delivery: Delivery) { seen.append("delivery \(delivery.deliveryTag)") }
        func confirmed(upTo number: UInt64, multiple: Bool, ack: Bool) {
            seen.append("\(ack ? "ack" : "nack") \(number)\(multiple ? "+" : "")")
        }
        func returned(_ message: ReturnedMessage) { seen.append("returned \(message.routingKey)") }
        func consumerCancelled(_ consumerTag: String) { seen.append("cancelled \(consumerTag)") }
        func channelClosed(_ error: AMQPError) { seen.append("closed \(error.replyCode ?? 0)") }
    }

    private static func delivery(_ tag: UInt64, channel: UInt16) -> AMQPEvent {
        .delivery(
            Delivery(
                channel: channel, consumerTag: "c", deliveryTag: tag, redelivered: false, exchange: "",
                routingKey: "q", properties: MessageProperties(), body: []))
    }

    private static func closed(_ channel: UInt16, code: UInt16) -> AMQPEvent {
        .channelClosed(AMQPError(.channelClosed, "closed", replyCode: code, replyText: "X", channel: channel))
    }

    @Test func eachEventGoesToTheHandlerOfItsChannel() throws {
        let (one, two) = (Recorder(), Recorder())
        let script = Script([
            [
                Self.delivery(7, channel: 2), .confirm(channel: 1, deliveryTag: 3, multiple: true, ack: true),
                .returned(
                    channel: 1, replyCode: 312, replyText: "NO_ROUTE", exchange: "", routingKey: "q1", messageID: nil),
                .consumerCancelled(channel: 2, consumerTag: "ctag"), Self.closed(2, code: 404),
                .confirm(channel: 1, deliveryTag: 4, multiple: false, ack: false),
            ]
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(1, to: one)
        pump.route(2, to: two)
        #expect(try pump.dispatch() == 6)
        #expect(one.seen == ["ack 3+", "returned q1", "nack 4"])
        #expect(two.seen == ["delivery 7", "cancelled ctag", "closed 404"])
    }

    @Test func eventsOfChannelsWithoutAHandlerAreDroppedButACloseIsThrown() throws {
        let script = Script([
            [
                Self.delivery(1, channel: 9), .confirm(channel: 40, deliveryTag: 1, multiple: false, ack: true),
                Self.closed(5, code: 406),
            ]
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(1, to: Recorder())
        let error = #expect(throws: AMQPError.self) { try pump.dispatch() }
        #expect(error?.replyCode == 406)
    }

    @Test func aHandlerWithoutACloseOfItsOwnThrowsIt() throws {
        final class Deliveries: AMQPChannelHandler {}
        let pump = AMQPEventPump(source: Script([[Self.closed(3, code: 404)]]))
        pump.route(3, to: Deliveries())
        #expect(throws: AMQPError.self) { try pump.dispatch() }
    }

    @Test func deliveryClosuresAndTheBlockingHandlerGetTheirEvents() throws {
        var tags: [UInt64] = []
        var blocking: [String?] = []
        let script = Script([
            [Self.delivery(1, channel: 4), .blocked(reason: "low on memory"), Self.delivery(2, channel: 4), .unblocked]
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(4) { tags.append($0.deliveryTag) }
        pump.blockingHandler = { blocking.append($0) }
        try pump.dispatch()
        #expect(tags == [1, 2])
        #expect(blocking == ["low on memory", nil])
    }

    @Test func aChannelRouteHandsEachEventToItsClosureAndThrowsACloseWithoutOne() throws {
        var seen: [String] = []
        let route = ChannelRoute(onDelivery: { seen.append("delivery \($0.deliveryTag)") })
        route.onConfirm = { seen.append("confirm \($0) \($1) \($2)") }
        route.onReturn = { seen.append("returned \($0.routingKey) \($0.messageID ?? "-")") }
        route.onConsumerCancel = { seen.append("cancelled \($0)") }
        let script = Script([
            [
                Self.delivery(1, channel: 6), .confirm(channel: 6, deliveryTag: 2, multiple: true, ack: false),
                .returned(
                    channel: 6, replyCode: 312, replyText: "NO_ROUTE", exchange: "", routingKey: "q", messageID: "j1"),
                .consumerCancelled(channel: 6, consumerTag: "ctag"),
            ],
            [Self.closed(6, code: 404)],
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(6, to: route)
        try pump.dispatch()
        #expect(seen == ["delivery 1", "confirm 2 true false", "returned q j1", "cancelled ctag"])
        #expect(throws: AMQPError.self) { try pump.dispatch() }
        route.onClose = { seen.append("closed \($0.replyCode ?? 0)") }
        script.reads = [[Self.closed(6, code: 406)]]
        try pump.dispatch()
        #expect(seen.last == "closed 406")
    }

    @Test func aRouteCanBeReplacedAndRemoved() throws {
        let (first, second) = (Recorder(), Recorder())
        let script = Script([
            [Self.delivery(1, channel: 1)], [Self.delivery(2, channel: 1)], [Self.delivery(3, channel: 1)],
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(1, to: first)
        try pump.dispatch()
        pump.route(1, to: second)
        try pump.dispatch()
        pump.removeRoute(1)
        try pump.dispatch()
        #expect(first.seen == ["delivery 1"])
        #expect(second.seen == ["delivery 2"])
        #expect(pump.handler(of: 1) == nil && pump.handler(of: 2000) == nil)
    }

    @Test func oneDispatchReadsTheSocketOnceAndThenOnlyWhatIsBuffered() throws {
        let recorder = Recorder()
        let script = Script([
            [Self.delivery(1, channel: 1), Self.delivery(2, channel: 1)], [Self.delivery(3, channel: 1)],
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(1, to: recorder)
        #expect(try pump.dispatch() == 2)
        #expect(script.socketReads == 1)
        #expect(try pump.dispatch() == 1)
        #expect(try pump.dispatch() == 0)
        #expect(recorder.seen == ["delivery 1", "delivery 2", "delivery 3"])
    }

    @Test func oneDispatchHandlesAtMostItsLimit() throws {
        let recorder = Recorder()
        let pump = AMQPEventPump(source: Script([(1...5).map { Self.delivery($0, channel: 1) }]))
        pump.route(1, to: recorder)
        #expect(try pump.dispatch(atMost: 3) == 3)
        #expect(try pump.dispatch(atMost: 3) == 2)
    }

    @Test func aDispatchUntilDoneWaitsBetweenReadsAndStopsOnceDone() throws {
        let channel = Recorder()
        // A read that brings nothing makes the pump wait; the confirm after it ends the dispatch.
        let script = Script([
            [Self.delivery(1, channel: 1)], [], [.confirm(channel: 1, deliveryTag: 1, multiple: false, ack: true)],
            [Self.delivery(2, channel: 1)],
        ])
        let pump = AMQPEventPump(source: script)
        pump.route(1, to: channel)
        let done = try pump.dispatch(until: .now + .seconds(60)) { channel.seen.contains("ack 1") }
        #expect(done)
        #expect(script.waits == 1)
        #expect(channel.seen == ["delivery 1", "ack 1"])
    }

    @Test func aDispatchUntilAPastDeadlineHandlesWhatCameAndReturnsFalse() throws {
        let channel = Recorder()
        let pump = AMQPEventPump(source: Script([[Self.delivery(1, channel: 1)]]))
        pump.route(1, to: channel)
        #expect(try !pump.dispatch(until: .now - .seconds(1)) { false })
        #expect(channel.seen == ["delivery 1"])
    }

    @Test func aDispatchUntilDoneChecksFirstAndReadsNothingWhenDone() throws {
        let script = Script([[Self.delivery(1, channel: 1)]])
        let pump = AMQPEventPump(source: script)
        #expect(try pump.dispatch(until: .now + .seconds(60)) { true })
        #expect(script.socketReads == 0)
    }
}
