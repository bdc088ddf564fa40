import Foundation
import Testing

@testable import Warren

@Suite struct ResultsCatchUpTests {
    static func result(_ jobID: String, _ status: JobStatus) -> JobResult {
        JobResult(
            jobID: jobID, type: "echo", sequence: 1, key: nil, status: status, workerID: "w", timings: JobTimings())
    }

    @Test func failuresAreHeldUntilTheReadingGetsToTheLastChunkTheProbeFound() {
        var catchUp = ResultsCatchUp()
        func holds(_ jobID: String, _ status: JobStatus) -> Bool { catchUp.holds(Self.result(jobID, status)) }
        #expect(!holds("before", .failed), "nothing is held before the reading starts")
        catchUp.start()
        #expect(holds("a", .failed))
        #expect(!holds("b", .succeeded))
        #expect(holds("c", .failed))
        catchUp.read(3)
        #expect(!catchUp.reachedEnd, "no end known yet")
        catchUp.probed(lastChunk: 7)
        #expect(!catchUp.reachedEnd)
        // A rerun's result supersedes the failure held.
        #expect(!holds("c", .succeeded))
        #expect(catchUp.isHolding("a") && !catchUp.isHolding("c"))
        catchUp.read(7)
        #expect(catchUp.reachedEnd)
        let held = catchUp.finish()
        #expect(held.map(\.jobID) == ["a"])
        #expect(!catchUp.isActive && !holds("d", .failed))
    }

    @Test func aProbeThatAnswersAfterTheReadingPassedItsChunkEndsItAtOnce() {
        var catchUp = ResultsCatchUp()
        catchUp.start()
        catchUp.read(10)
        catchUp.probed(lastChunk: 8)
        #expect(catchUp.reachedEnd)
        var unread = ResultsCatchUp()
        unread.start()
        unread.probed(lastChunk: 8)
        #expect(!unread.reachedEnd, "nothing read yet")
        unread.probed(lastChunk: nil)
        #expect(unread.reachedEnd)
    }
}
