import Foundation
import Testing

@testable import Warren

@Suite("JobTimers")
struct JobTimersTests {
    @Test func aJobsTimeLimitIsTheShorterOfItsOwnAndItsTypes() {
        let timers = JobTimers(jobs: InFlightJobs(), typeLimits: ["test": .seconds(10)])
        var descriptor = TestJobs.descriptor(type: "test")
        #expect(timers.timeLimit(of: descriptor) == .seconds(10))
        descriptor.timeLimitSeconds = 2
        #expect(timers.timeLimit(of: descriptor) == .seconds(2))
        descriptor.timeLimitSeconds = 20
        #expect(timers.timeLimit(of: descriptor) == .seconds(10))
        #expect(timers.timeLimit(of: TestJobs.descriptor(type: "other")) == nil)
        #expect(
            JobTimers.describe(.milliseconds(250)) == "250 ms" && JobTimers.describe(.milliseconds(1500)) == "1.5 s")
    }

    @Test func jobsWithoutDeadlinesOrLimitsNeverWakeTheLoop() {
        let jobs = InFlightJobs()
        let timers = JobTimers(jobs: jobs, typeLimits: [:])
        let job = WorkerParts.job("a")
        jobs.insert(job)
        timers.arrived(job.descriptor)
        #expect(timers.nextWake == nil)
    }

    @Test func aJobWhoseDeadlinePassedIsCancelledBeforeItStarts() throws {
        let jobs = InFlightJobs()
        let timers = JobTimers(jobs: jobs, typeLimits: [:])
        let late = WorkerParts.job(TestJobs.descriptor(id: "late", deadline: Date(timeIntervalSinceNow: -1)))
        let later = WorkerParts.job(TestJobs.descriptor(id: "later", deadline: Date(timeIntervalSinceNow: 3600)))
        jobs.insert(late)
        jobs.insert(later)
        timers.arrived(late.descriptor)
        let wake = try #require(timers.nextWake)
        #expect(wake <= .now)
        timers.enforce()
        let cancellation = try #require(late.operation.job.cancellation)
        #expect(cancellation.reason == "deadline" && cancellation.message == "deadline passed before the job started")
        #expect(!later.operation.job.isCancelled)
        jobs.remove("late")  // as its end is handled
        #expect(try #require(timers.nextWake) > .now)
    }
}
