import Foundation
import Testing

@testable import Warren

@Suite("Lifecycle")
struct LifecycleTests {
    private func lifecycle(_ change: (inout Worker.Configuration) -> Void = { _ in }) -> Lifecycle {
        Lifecycle(configuration: WorkerParts.configuration(change))
    }

    @Test func aFirstStopGivesTheGracePeriodTwiceAndASecondEndsItNow() {
        let lifecycle = lifecycle { $0.shutdownGracePeriod = .seconds(60) }
        #expect(!lifecycle.isStopping && lifecycle.consumes)
        let before = ContinuousClock.now
        #expect(lifecycle.beginStop())
        #expect(lifecycle.isStopping && lifecycle.isLeaving && !lifecycle.consumes)
        #expect(!lifecycle.graceIsOver && !lifecycle.abandonDeadlinePassed)
        let wake = try! #require(lifecycle.nextWake)
        #expect(wake >= before + .seconds(60) && wake <= .now + .seconds(60))
        #expect(!lifecycle.beginStop())
        #expect(lifecycle.graceIsOver && lifecycle.abandonDeadlinePassed)
    }

    @Test func aStoppingWorkerIsDoneOnceNothingWaits() {
        let lifecycle = lifecycle { $0.shutdownGracePeriod = .seconds(60) }
        #expect(!lifecycle.isDone(awaitingBroker: false, holdsJobs: false, abandonsJobs: false))
        _ = lifecycle.beginStop()
        #expect(lifecycle.isDone(awaitingBroker: false, holdsJobs: false, abandonsJobs: false))
        #expect(!lifecycle.isDone(awaitingBroker: true, holdsJobs: false, abandonsJobs: false))
        #expect(!lifecycle.isDone(awaitingBroker: false, holdsJobs: true, abandonsJobs: true))
        _ = lifecycle.beginStop()  // the abandon deadline is now
        #expect(lifecycle.isDone(awaitingBroker: false, holdsJobs: true, abandonsJobs: true))
        #expect(!lifecycle.isDone(awaitingBroker: false, holdsJobs: true, abandonsJobs: false))
        // Past the abandon deadline no confirm is waited for.
        #expect(lifecycle.isDone(awaitingBroker: true, holdsJobs: true, abandonsJobs: false))
    }

    @Test func theLastJobMaxJobsAllowsRetiresTheWorkerOnce() {
        let lifecycle = lifecycle { $0.maxJobs = 2 }
        #expect(lifecycle.countsJobs)
        #expect(!lifecycle.jobTaken())
        #expect(lifecycle.jobTaken())
        lifecycle.retire(.maxJobs, because: "took the most jobs", metadata: ["maxJobs": "2"])
        #expect(lifecycle.recycling == .maxJobs && lifecycle.isLeaving && !lifecycle.isStopping)
        #expect(lifecycle.takeRetirement()?.reason == "took the most jobs")
        #expect(lifecycle.takeRetirement() == nil)
        lifecycle.retire(.maxMemory, because: "memory", metadata: [:])
        #expect(lifecycle.recycling == .maxJobs && lifecycle.takeRetirement() == nil)
    }

    @Test func aWorkerWithoutLimitsCountsNothingAndNeverLooksAtItsMemory() {
        let lifecycle = lifecycle()
        #expect(!lifecycle.countsJobs && !lifecycle.jobTaken())
        lifecycle.jobsEnded()
        #expect(lifecycle.memoryPastLimit() == nil)
    }

    @Test func aWorkerPastItsMemoryLimitSaysSoOncePerEndOfJobs() throws {
        let lifecycle = lifecycle { $0.maxResidentMemory = 1 << 20 }
        #expect(lifecycle.memoryPastLimit() == nil)  // no job ended yet
        lifecycle.jobsEnded()
        let past = try #require(lifecycle.memoryPastLimit(), "a test process holds more than 1 MiB")
        #expect(past.limit == 1 << 20 && past.resident > past.limit)
        #expect(lifecycle.memoryPastLimit() == nil)
    }

    @Test func aRetiredWorkerStopsOnceItHoldsNothingRunnableAndAwaitsNoRedelivery() {
        let lifecycle = lifecycle()
        #expect(!lifecycle.retiredWorkerMayStop(holdsRunnableJobs: false))
        lifecycle.retire(.maxJobs, because: "", metadata: [:])
        #expect(!lifecycle.retiredWorkerMayStop(holdsRunnableJobs: true))
        lifecycle.awaitRedeliveries()
        #expect(lifecycle.consumes && !lifecycle.retiredWorkerMayStop(holdsRunnableJobs: false))
        lifecycle.hold(WorkerParts.delivery(tag: 7))
        #expect(lifecycle.stopAwaitingRedeliveries(stillAwaited: true) == nil)
        let held = try! #require(lifecycle.stopAwaitingRedeliveries(stillAwaited: false))
        #expect(held.map(\.deliveryTag) == [7])
        #expect(!lifecycle.consumes && lifecycle.retiredWorkerMayStop(holdsRunnableJobs: false))
    }
}
