import Testing

@testable import Warren

@Suite("SentBatches")
struct SentBatchesTests {
    let start = ContinuousClock.now

    @Test func batchesAreNumberedAsTheBrokerNumbersPublishesAndAConfirmForgetsTheOnesItCovers() {
        var batches = SentBatches()
        batches.sent([[1]])
        batches.sent([[2]])
        batches.sent([[3]])
        #expect(batches.confirmed(upTo: 2, multiple: true, ack: true, now: start).refused == 0)
        #expect(batches.count == 1 && !batches.isEmpty)
        #expect(batches.confirmed(upTo: 4, multiple: false, ack: true, now: start).refused == 0, "4 is not a batch")
        #expect(batches.count == 1)
        #expect(batches.confirmed(upTo: 3, multiple: false, ack: true, now: start).refused == 0)
        #expect(batches.isEmpty && batches.dueForResend(at: start) == nil)
    }

    @Test func settlementsHeldByABatchComeBackWithItsConfirm() {
        var batches = SentBatches()
        let first = Settlement(deliveryTag: 1, action: .ack, unconfirmed: 1)
        let second = Settlement(deliveryTag: 2, action: .ack, unconfirmed: 1)
        batches.sent([[1]], holding: [first])
        batches.sent([[2]])
        batches.sent([[3]], holding: [second])
        let answer = batches.confirmed(upTo: 2, multiple: true, ack: true, now: start)
        #expect(answer.refused == 0 && answer.settlements.map(\.deliveryTag) == [1])
        let refusal = batches.confirmed(upTo: 3, multiple: false, ack: false, now: start)
        #expect(refusal.refused == 1 && refusal.settlements.map(\.deliveryTag) == [2])
    }

    @Test func aRefusedBatchIsDueAgainAfterTheRetryDelayOldestFirst() {
        var batches = SentBatches()
        batches.sent([[1]])
        batches.sent([[2]])
        batches.sent([[3]])
        #expect(batches.confirmed(upTo: 2, multiple: true, ack: false, now: start).refused == 2)
        #expect(batches.count == 3)
        #expect(batches.resendAt == start + batches.retryDelay)
        #expect(batches.dueForResend(at: start) == nil, "not before the delay")
        let later = start + batches.retryDelay
        #expect(batches.dueForResend(at: later) == [[1]])
        batches.resent(as: [[[1]]])  // confirm number 4
        #expect(batches.dueForResend(at: later) == [[2]])
        batches.resent(as: [[[2]]])  // 5
        #expect(batches.dueForResend(at: later) == nil && batches.resendAt == nil)
        #expect(batches.confirmed(upTo: 3, multiple: false, ack: true, now: later).refused == 0)
        #expect(batches.count == 2)
        #expect(batches.confirmed(upTo: 5, multiple: true, ack: true, now: later).refused == 0)
        #expect(batches.isEmpty)
    }

    @Test func aLostConnectionMakesEveryUnconfirmedBatchDueAtOnceInPublishingOrderAndRestartsNumbering() {
        var batches = SentBatches()
        let held = Settlement(deliveryTag: 9, action: .ack, unconfirmed: 1)
        batches.sent([[1]])
        batches.sent([[2]], holding: [held])
        _ = batches.confirmed(upTo: 1, multiple: false, ack: false, now: start)  // refused: due a second later
        batches.sent([[3]])
        #expect(batches.channelLost().map(\.deliveryTag) == [9])
        // The refused one first, then the unconfirmed ones by confirm number; no waiting.
        var order: [[[UInt8]]] = []
        while let results = batches.dueForResend(at: start) {
            order.append(results)
            batches.resent(as: [results])
        }
        #expect(order == [[[1]], [[2]], [[3]]])
        #expect(batches.count == 3)
        // The new channel numbers them 1, 2, 3.
        #expect(batches.confirmed(upTo: 3, multiple: true, ack: true, now: start).settlements.isEmpty)
        #expect(batches.isEmpty)
    }

    @Test func aBatchResentInPartsIsConfirmedPartByPart() {
        var batches = SentBatches()
        batches.sent([[1], [2]])
        _ = batches.channelLost()
        let results = batches.dueForResend(at: start)
        #expect(results == [[1], [2]])
        batches.resent(as: [[[1]], [[2]]])  // confirm numbers 1 and 2
        #expect(batches.count == 2 && batches.dueForResend(at: start) == nil)
        #expect(batches.confirmed(upTo: 1, multiple: false, ack: true, now: start).refused == 0)
        #expect(batches.count == 1)
        #expect(batches.confirmed(upTo: 2, multiple: false, ack: false, now: start).refused == 1)
        #expect(batches.dueForResend(at: start + batches.retryDelay) == [[2]])
    }
}
