import Foundation
import Testing

@testable import Warren

@Suite("Scheduled jobs: hops through the delay queues")
struct ScheduleHopTests {
    @Test(arguments: [
        (1, 1), (999, 999), (1_000, 1_000), (1_999, 1_000), (3_000, 2_000), (511_999, 256_000), (512_000, 512_000),
        (32_767_999, 16_384_000), (32_768_000, 32_768_000), (86_400_000, 32_768_000),
    ])
    func eachHopIsTheLongestDelayQueueThatDoesNotPassTheTime(_ left: Int, _ hop: Int) {
        #expect(DelayQueues.hop(milliseconds: left) == hop)
    }

    @Test func aHopWaitsAtLeastAMillisecond() {
        #expect(DelayQueues.hop(milliseconds: 0) == 1)
    }

    @Test func theHopsAddUpToTheTimeLeft() {
        var left = 86_400_123
        var hops: [Int] = []
        while left > 0 {
            hops.append(DelayQueues.hop(milliseconds: left))
            left -= hops.last!
        }
        #expect(hops == [32_768_000, 32_768_000, 16_384_000, 4_096_000, 256_000, 128_000, 123])
    }
}

@Suite("DelayQueues: retries")
struct RetryWaitTests {
    private func job(attempt: Int = 1, maxAttempts: Int? = nil, deadline: Date? = nil) -> InFlightJob {
        var descriptor = TestJobs.descriptor(deadline: deadline)
        descriptor.maxAttempts = maxAttempts
        let job = WorkerParts.job(descriptor)
        return InFlightJob(
            descriptor: descriptor, delivery: job.delivery, generation: 1, queue: "q", localQueue: "default",
            attempt: attempt, receivedAt: Date(), operation: job.operation)
    }

    @Test func theBackoffDoublesFromASecondUpToFiveMinutesWithinAQuarter() {
        for (attempt, base) in [(1, 1.0), (2, 2.0), (3, 4.0), (10, 300.0), (40, 300.0)] {
            let wait = DelayQueues.retryDelay(after: attempt) / .seconds(1)
            #expect(wait >= base * 0.75 - 0.001 && wait <= base * 1.25 + 0.001, "attempt \(attempt): \(wait)")
        }
    }

    @Test func onlyARetryableFailureWithAttemptsLeftAndTimeBeforeItsDeadlineIsRetried() {
        let retryable = JobError(code: "busy", message: "later", retryable: true)
        #expect(DelayQueues.retryWait(for: job(), after: JobError(code: "bad", message: "no")) == nil)
        #expect(DelayQueues.retryWait(for: job(attempt: 3), after: retryable) == nil)  // three attempts by default
        #expect(DelayQueues.retryWait(for: job(attempt: 3, maxAttempts: 5), after: retryable) != nil)
        let soon = Date(timeIntervalSinceNow: 0.5)
        #expect(DelayQueues.retryWait(for: job(deadline: soon), after: retryable) == nil)
        let chosen = JobError(code: "busy", message: "later", retryable: true, retryAfter: .seconds(42))
        #expect(DelayQueues.retryWait(for: job(), after: chosen) == .seconds(42))
    }
}
