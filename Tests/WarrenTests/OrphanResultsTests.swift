import Foundation
import Testing

@testable import Warren

@Suite struct OrphanResultsTests {
    private func result(_ jobID: String) -> JobResult {
        JobResult(
            jobID: jobID, type: "echo", sequence: 1, key: nil, status: .succeeded, workerID: "w", timings: JobTimings())
    }

    @Test func aKeptResultIsTakenOnce() {
        var orphans = OrphanResults()
        orphans.keep(result("a"))
        #expect(orphans.take("b") == nil)
        #expect(orphans.take("a")?.jobID == "a")
        #expect(orphans.take("a") == nil)
        #expect(orphans.isEmpty)
    }

    @Test func pastItsCapacityTheOldestIsForgotten() {
        var orphans = OrphanResults(capacity: 2)
        for id in ["a", "b", "c"] { orphans.keep(result(id)) }
        #expect(orphans.jobIDs == ["b", "c"])
        #expect(orphans.take("a") == nil)
    }

    @Test func resultsKeptPastTheirMaximumAgeAreForgotten() {
        var orphans = OrphanResults(maxAge: .seconds(600))
        let start = ContinuousClock.now
        orphans.keep(result("a"), at: start)
        orphans.keep(result("b"), at: start + .seconds(300))
        #expect(orphans.forgetExpired(now: start + .seconds(599)).isEmpty)
        #expect(orphans.forgetExpired(now: start + .seconds(600)) == ["a"])
        #expect(orphans.jobIDs == ["b"])
        #expect(orphans.take("a") == nil)
        #expect(orphans.forgetExpired(now: start + .seconds(900)) == ["b"])
        #expect(orphans.isEmpty)
    }
}
