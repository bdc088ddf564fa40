import Testing

@testable import Warren

@Suite("BatchResends")
struct BatchResendsTests {
    let start = ContinuousClock.now

    @Test func aRefusedBatchIsDueAgainAfterTheRetryDelayOldestFirst() {
        var resends = BatchResends()
        resends.refused([[1]], at: start)
        resends.refused([[2]], at: start)
        #expect(resends.count == 2 && resends.resendAt == start + resends.retryDelay)
        #expect(resends.dueForResend(at: start) == nil)
        #expect(resends.dueForResend(at: start + .seconds(1)) == [[1]])
        resends.resent()
        #expect(resends.dueForResend(at: start + .seconds(1)) == [[2]])
        resends.resent()
        #expect(resends.isEmpty && resends.resendAt == nil)
    }

    @Test func batchesLostWithTheirChannelAreDueAtOnceAfterTheRefusedOnes() {
        var resends = BatchResends()
        resends.refused([[1]], at: start)
        resends.lost([[[2]], [[3]]])
        #expect(resends.resendAt == nil)
        #expect(resends.dueForResend(at: start) == [[1]])
        resends.resent()
        #expect(resends.dueForResend(at: start) == [[2]])
    }
}
