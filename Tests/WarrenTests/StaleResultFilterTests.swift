import Foundation
import Testing

@testable import Warren

@Suite("StaleResultFilter")
struct StaleResultFilterTests {
    private func result(_ jobID: String, key: String?, sequence: UInt64) -> JobResult {
        JobResult(
            jobID: jobID, type: "sum", sequence: sequence, key: key, status: .succeeded, workerID: "w",
            timings: JobTimings())
    }

    @Test func newerResultsOfAKeyAreCurrent() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("a", key: "list", sequence: 1)) == .current)
        #expect(filter.judge(result("b", key: "list", sequence: 2)) == .current)
        #expect(filter.judge(result("c", key: "list", sequence: 10)) == .current)
    }

    @Test func anOlderArrivalIsStaleAndNamesTheNewerSequence() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("new", key: "list", sequence: 20)) == .current)
        #expect(filter.judge(result("old", key: "list", sequence: 10)) == .stale(newer: 20))
        // A stale arrival does not lower the bar for later ones.
        #expect(filter.judge(result("older", key: "list", sequence: 15)) == .stale(newer: 20))
        #expect(filter.judge(result("newest", key: "list", sequence: 21)) == .current)
        #expect(filter.judge(result("late", key: "list", sequence: 20)) == .stale(newer: 21))
    }

    @Test func anEqualSequenceIsNotStale() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("a", key: "list", sequence: 5)) == .current)
        #expect(filter.judge(result("b", key: "list", sequence: 5)) == .current)
    }

    @Test func keysAreJudgedIndependently() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("a", key: "one", sequence: 100)) == .current)
        #expect(filter.judge(result("b", key: "two", sequence: 1)) == .current)
        #expect(filter.judge(result("c", key: "one", sequence: 50)) == .stale(newer: 100))
        #expect(filter.judge(result("d", key: "two", sequence: 2)) == .current)
    }

    @Test func resultsWithoutAKeyAreNeverStale() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("a", key: nil, sequence: 100)) == .current)
        #expect(filter.judge(result("b", key: nil, sequence: 1)) == .current)
        #expect(filter.judge(result("c", key: "list", sequence: 50)) == .current)
        #expect(filter.judge(result("d", key: nil, sequence: 0)) == .current)
    }

    @Test func aSecondResultOfTheSameJobIsADuplicate() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("a", key: "list", sequence: 1)) == .current)
        #expect(filter.judge(result("a", key: "list", sequence: 1)) == .duplicate)
        #expect(filter.judge(result("k", key: nil, sequence: 1)) == .current)
        #expect(filter.judge(result("k", key: nil, sequence: 1)) == .duplicate)
    }

    @Test func aDuplicateOfAStaleResultIsStillADuplicate() {
        var filter = StaleResultFilter()
        #expect(filter.judge(result("new", key: "list", sequence: 2)) == .current)
        #expect(filter.judge(result("old", key: "list", sequence: 1)) == .stale(newer: 2))
        #expect(filter.judge(result("old", key: "list", sequence: 1)) == .duplicate)
    }

    @Test func theResultOfARunAfterADeadRequeueIsCurrentAndTheRunBeforeReadLateADuplicate() {
        var filter = StaleResultFilter()
        var rerun = result("a", key: "list", sequence: 1)
        rerun.requeuedAt = Date(timeIntervalSince1970: 1_000)
        #expect(filter.judge(result("a", key: "list", sequence: 1)) == .current)
        #expect(filter.judge(rerun) == .current)
        #expect(filter.judge(rerun) == .duplicate)
        #expect(filter.judge(result("a", key: "list", sequence: 1)) == .duplicate)
        #expect(rerun.isRerun(of: result("a", key: "list", sequence: 1)))
        #expect(!result("a", key: "list", sequence: 1).isRerun(of: rerun))
        #expect(!rerun.isRerun(of: rerun))
        // The same instant, as a header's milliseconds and as read back from the result's text.
        var header = rerun
        header.requeuedAt = Date(timeIntervalSince1970: Double(1_795_582_204_759) / 1000)
        var readBack = rerun
        readBack.requeuedAt = try? JobResult.decode(Array(try! header.encoded())).requeuedAt
        #expect(readBack.requeuedAt != nil && !readBack.isRerun(of: header) && !header.isRerun(of: readBack))
        // A job with a newer sequence of its key still makes the rerun of an older one stale.
        #expect(filter.judge(result("b", key: "list", sequence: 5)) == .current)
        var late = rerun
        late.requeuedAt = Date(timeIntervalSince1970: 2_000)
        #expect(filter.judge(late) == .stale(newer: 5))
    }
}
