import Testing

@testable import Warren

@Suite("SentBatches")
struct SentBatchesTests {
    let start = ContinuousClock.now

    @Test func aConfirmForgetsTheBatchesItCovers() {
        var batches = SentBatches()
        batches.sent([1], confirm: 3)
        batches.sent([2], confirm: 5)
        batches.sent([3], confirm: 8)
        #expect(batches.confirmed(upTo: 5, multiple: true, ack: true, now: start) == 0)
        #expect(batches.count == 1 && !batches.isEmpty)
        #expect(batches.confirmed(upTo: 6, multiple: false, ack: true, now: start) == 0, "6 is not a batch")
        #expect(batches.confirmed(upTo: 8, multiple: false, ack: true, now: start) == 0)
        #expect(batches.isEmpty && batches.dueForResend(at: start) == nil)
    }

    @Test func aRefusedBatchIsDueAgainAfterTheRetryDelayOldestFirst() {
        var batches = SentBatches()
        batches.sent([1], confirm: 1)
        batches.sent([2], confirm: 2)
        batches.sent([3], confirm: 3)
        #expect(batches.confirmed(upTo: 2, multiple: true, ack: false, now: start) == 2)
        #expect(batches.count == 3)
        #expect(batches.resendAt == start + batches.retryDelay)
        #expect(batches.dueForResend(at: start) == nil, "not before the delay")
        let later = start + batches.retryDelay
        #expect(batches.dueForResend(at: later) == [1])
        batches.resent(confirm: 4)
        #expect(batches.dueForResend(at: later) == [2])
        batches.resent(confirm: 5)
        #expect(batches.dueForResend(at: later) == nil && batches.resendAt == nil)
        #expect(batches.confirmed(upTo: 5, multiple: true, ack: true, now: later) == 0)
        #expect(batches.isEmpty)
    }

    @Test func aLostConnectionMakesEveryUnconfirmedBatchDueAtOnceInPublishingOrder() {
        var batches = SentBatches()
        batches.sent([1], confirm: 7)
        batches.sent([2], confirm: 2)
        _ = batches.confirmed(upTo: 7, multiple: false, ack: false, now: start)  // refused: due a second later
        batches.sent([3], confirm: 9)
        batches.connectionLost()
        // The refused one first, then the unconfirmed ones by confirm number; no waiting.
        var order: [[UInt8]] = []
        var confirm: UInt64 = 1
        while let body = batches.dueForResend(at: start) {
            order.append(body)
            batches.resent(confirm: confirm)
            confirm += 1
        }
        #expect(order == [[1], [2], [3]])
        #expect(batches.count == 3)
        #expect(batches.confirmed(upTo: 3, multiple: true, ack: true, now: start) == 0)
        #expect(batches.isEmpty)
    }
}
