import Foundation
import Testing

@testable import Warren

@Suite("RateLimitGate, JobQuotaGate, RunAloneGate")
struct GateTests {
    @Test func aRateLimitedTypesSecondJobWaitsForItsTurnAndOtherTypesPass() throws {
        let gate = RateLimitGate(limits: ["api": try RateLimit(1, per: .seconds(3600))])
        guard case .pass = try gate.admit(TestJobs.waiting("a", type: "api")) else { return unexpected("not passed") }
        guard case .hold = try gate.admit(TestJobs.waiting("b", type: "api")) else { return unexpected("not held") }
        guard case .pass = try gate.admit(TestJobs.waiting("c", type: "other")) else { return unexpected("not passed") }
        #expect(gate.takeReleased().isEmpty)
        let wake = try #require(gate.nextWake)
        #expect(wake > .now + .seconds(3500))
        #expect(gate.startGate(for: "api") != nil && gate.startGate(for: "other") == nil)
    }

    @Test func aFreshCopyKeepsTheTurnsItWasHandedAtMostOneIntervalAway() throws {
        let gate = RateLimitGate(limits: ["api": try RateLimit(1, per: .seconds(10))])
        gate.keep(turns: ["api": 1000, "other": 5])
        let turns = gate.nextTurns()
        #expect(turns.keys.sorted() == ["api"])
        #expect(turns["api"]! > 9 && turns["api"]! <= 10)
        guard case .hold = try gate.admit(TestJobs.waiting("a", type: "api")) else { return unexpected("not held") }
    }

    @Test func theQuotaRetiresTheWorkerAtItsLastJob() throws {
        let lifecycle = Lifecycle(configuration: WorkerParts.configuration { $0.maxJobs = 2 })
        let gate = JobQuotaGate(lifecycle: lifecycle, maxJobs: 2)
        guard case .pass = try gate.admit(WorkerParts.job("a")) else { return unexpected("not passed") }
        #expect(lifecycle.recycling == nil)
        guard case .pass = try gate.admit(WorkerParts.job("b")) else { return unexpected("not passed") }
        #expect(lifecycle.recycling == .maxJobs)
        #expect(lifecycle.takeRetirement()?.metadata["maxJobs"] == "2")
    }

    @Test func aJobThatRunsAloneWaitsForTheWorkerToBeIdleAndHoldsTheOthersBack() throws {
        let jobs = InFlightJobs()
        let localQueues = LocalQueues(widths: ["default": 2])
        let crashes = CrashWatch(
            configuration: WorkerParts.configuration(), broker: "b", logger: WorkerParts.logger,
            metrics: WorkerMetrics(operationTypes: []))
        let gate = RunAloneGate(
            jobs: jobs, localQueues: localQueues, crashes: crashes, metrics: WorkerMetrics(operationTypes: []))
        let running = WorkerParts.job("running")
        jobs.insert(running)
        running.isQueued = true  // in its local queue
        let alone = WorkerParts.job("alone")
        alone.runsAlone = true
        jobs.insert(alone)
        guard case .pass = try gate.admit(running) else { return unexpected("not passed") }
        guard case .hold = try gate.admit(alone) else { return unexpected("not held") }
        #expect(gate.blocksOthers)
        #expect(gate.takeReleased().isEmpty)  // another job is in a local queue
        jobs.remove("running")
        gate.ended(running)
        let released = gate.takeReleased()
        #expect(released.map(\.0.descriptor.id) == ["alone"])
        #expect(gate.blocksOthers)
        alone.isQueued = true
        gate.ended(alone)
        #expect(!gate.blocksOthers)
    }
}
