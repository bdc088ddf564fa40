import Foundation
import Testing

@testable import Warren

@Suite("DependencyGate and ParkedJobs")
struct DependencyGateTests {
    @Test func aJobWithoutDependenciesPassesAndOneThatDependsOnItselfIsRefused() throws {
        let gate = DependencyGate(
            jobs: InFlightJobs(), link: try WorkerParts.link(), maxParkedJobs: 10, logger: WorkerParts.logger)
        guard case .pass = try gate.admit(WorkerParts.job("a")) else { return unexpected("not passed") }
        guard case .reject(let error) = try gate.admit(WorkerParts.job("b", dependsOn: ["b"])) else {
            return unexpected("not refused")
        }
        #expect(error.code == "dependencyCycle" && error.message == "job b depends on itself")
        #expect(gate.parkedCount == 0)
    }

    @Test func aCycleIsFoundThroughEveryParkedJob() {
        var parked = ParkedJobs()
        parked.park(WorkerParts.job("a"), waitingOn: ["b"])
        parked.park(WorkerParts.job("b"), waitingOn: ["c", "x"])
        #expect(parked.cycle(from: "a") == nil)
        parked.park(WorkerParts.job("c"), waitingOn: ["a"])
        #expect(parked.cycle(from: "c") == ["c", "a", "b", "c"])
        #expect(parked.count == 3 && parked.waitingOn("b") == ["c", "x"])
    }

    @Test func aResultReleasesTheJobsThatWaitForNothingMoreOldestFirst() {
        var parked = ParkedJobs()
        let early = WorkerParts.job("early", receivedAt: Date(timeIntervalSinceNow: -10))
        let late = WorkerParts.job("late")
        let both = WorkerParts.job("both")
        parked.park(late, waitingOn: ["d"])
        parked.park(early, waitingOn: ["d"])
        parked.park(both, waitingOn: ["d", "e"])
        let result = JobResult(
            jobID: "d", type: "test", sequence: 1, key: nil, status: .succeeded, workerID: "w",
            timings: JobTimings())
        let ready = parked.resolve("d", result: result, isHeld: { _ in true })
        #expect(ready.map(\.descriptor.id) == ["early", "late"])
        #expect(ready.allSatisfy { $0.waitingOn == nil && $0.dependencyResults["d"] == result })
        #expect(parked.waitingOn("both") == ["e"] && parked.count == 1)
        #expect(parked.resolve("e", result: nil, isHeld: { _ in false }).isEmpty)
        #expect(parked.isEmpty)
    }

    @Test func jobsParkedTooLongAreUnparked() {
        var parked = ParkedJobs()
        parked.park(WorkerParts.job("old", receivedAt: Date(timeIntervalSinceNow: -700)), waitingOn: ["x"])
        parked.park(WorkerParts.job("new"), waitingOn: ["x"])
        let old = parked.unpark(receivedBefore: Date(timeIntervalSinceNow: -DependencyGate.parkedLifetime))
        #expect(old.map(\.descriptor.id) == ["old"] && parked.count == 1)
        #expect(parked.unpark("new")?.isParked == false && parked.unpark("new") == nil)
    }
}
