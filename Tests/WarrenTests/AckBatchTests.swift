import Testing

@testable import Warren

@Suite("AckBatch")
struct AckBatchTests {
    @Test func oneMultipleAckCoversEverySettledDeliveryWhenNoneIsOpen() {
        var batch = AckBatch()
        for tag: UInt64 in 1...5 { batch.received(tag) }
        for tag: UInt64 in [3, 1, 5, 2, 4] { batch.acknowledge(tag) }
        #expect(batch.take() == .init(upTo: 5, singles: []))
        #expect(batch.take() == .init(upTo: nil, singles: []))
    }

    @Test func anOpenDeliveryStopsTheMultipleAckBelowIt() {
        var batch = AckBatch()
        for tag: UInt64 in 1...6 { batch.received(tag) }
        for tag: UInt64 in [1, 2, 4, 6] { batch.acknowledge(tag) }
        // 3 and 5 still run: a multiple ack up to 4 would acknowledge 3 too.
        #expect(batch.take() == .init(upTo: 2, singles: [4, 6]))
        batch.acknowledge(3)
        #expect(batch.take() == .init(upTo: 3, singles: []))
        batch.acknowledge(5)
        #expect(batch.take() == .init(upTo: 5, singles: []))
    }

    @Test func nackedDeliveriesNoLongerHoldBackTheAcksAboveThem() {
        var batch = AckBatch()
        for tag: UInt64 in 1...4 { batch.received(tag) }
        batch.reject(1)
        batch.acknowledge(3)
        #expect(batch.take() == .init(upTo: nil, singles: [3]))  // 2 is open, and below 3
        batch.reject(2)
        batch.acknowledge(4)
        #expect(batch.take() == .init(upTo: 4, singles: []))
    }

    @Test func aNewConnectionForgetsTheOldTags() {
        var batch = AckBatch()
        batch.received(1)
        batch.received(2)
        batch.acknowledge(2)
        batch.reset()
        #expect(batch.take() == .init(upTo: nil, singles: []))
        batch.received(1)
        batch.acknowledge(1)
        #expect(batch.take() == .init(upTo: 1, singles: []))
    }

    @Test func acksWaitUntilAQuarterOfThePrefetchIsSettled() {
        var batch = AckBatch()
        batch.hold.threshold = 3
        let start = ContinuousClock.now
        for tag: UInt64 in 1...4 { batch.received(tag) }
        batch.acknowledge(1, at: start)
        batch.acknowledge(2, at: start)
        #expect(batch.take(at: start) == .init(upTo: nil, singles: []))
        #expect(batch.dueAt == start + batch.hold.maxDelay)
        batch.acknowledge(3, at: start)
        #expect(batch.dueAt == start)
        #expect(batch.take(at: start) == .init(upTo: 3, singles: []))
        #expect(batch.isEmpty && batch.dueAt == nil)
    }

    @Test func anAckWaitsNoLongerThanTheMaximumDelay() {
        var batch = AckBatch()
        batch.hold.threshold = 25
        let start = ContinuousClock.now
        batch.received(1)
        batch.received(2)
        batch.acknowledge(2, at: start)
        #expect(batch.take(at: start + .microseconds(1_999)) == .init(upTo: nil, singles: []))
        #expect(batch.take(at: start + .milliseconds(2)) == .init(upTo: nil, singles: [2]))
    }

    @Test func forcedAcksGoOutBeforeTheyAreDue() {
        var batch = AckBatch()
        batch.hold.threshold = 25
        batch.received(1)
        batch.acknowledge(1)
        #expect(batch.take(force: true) == .init(upTo: 1, singles: []))
        #expect(batch.isEmpty)
    }
}
