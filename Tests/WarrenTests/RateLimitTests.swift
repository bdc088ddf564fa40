import AMQP
import Foundation
import Testing

@testable import Warren

@Suite("Rate limits")
struct RateLimitTests {
    @Test func parsesCountsPerUnit() throws {
        #expect(try RateLimit(parsing: "10/s").interval == .milliseconds(100))
        #expect(try RateLimit(parsing: "120/m").interval == .milliseconds(500))
        #expect(try RateLimit(parsing: "2/h").interval == .seconds(1800))
        #expect(try RateLimit(parsing: "1/d").interval == .seconds(86_400))
        #expect(try RateLimit(parsing: "3/s").interval == .seconds(1) / 3)
        #expect(try RateLimit(parsing: "100/m").description == "100/m")
        #expect(try RateLimit(7, per: .seconds(90)).description == "7 per 90.0 seconds")
    }

    @Test func refusesWhatIsNoRate() {
        for text in ["", "10", "10/", "/s", "10/w", "ten/s", "10/s/s", "1.5/s", " 10/s"] {
            let error = #expect(throws: WarrenError.self) { try RateLimit(parsing: text) }
            #expect(
                error?.message
                    == "rate limit '\(text)': expected N/s, N/m, N/h or N/d (jobs per second, minute, hour or day)")
        }
        #expect(throws: WarrenError.self) { try RateLimit(parsing: "0/s") }
        #expect(throws: WarrenError.self) { try RateLimit(parsing: "-1/s") }
        #expect(throws: WarrenError.self) { try RateLimit(1, per: .milliseconds(999)) }
    }

    /// A job the worker holds, for the throttle: only its id and priority matter.
    private func job(_ id: String, _ priority: JobPriority = .normal) -> InFlightJob {
        let descriptor = OperationDescriptor(id: id, type: "api", priority: priority, sequence: 1)
        let delivery = Delivery(
            channel: 1, consumerTag: "c", deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q",
            properties: MessageProperties(), body: [])
        let operation = JobOperation(
            job: JobContext(descriptor: descriptor, attempt: 1, logger: TestJobs.logger), input: .null,
            body: .blocking { _, _ in .null }, report: { _ in })
        return InFlightJob(
            descriptor: descriptor, delivery: delivery, generation: 1, queue: "q", localQueue: "default", attempt: 1,
            receivedAt: Date(), operation: operation)
    }

    @Test func spacesJobsEvenlyNeverCloserThanTheInterval() throws {
        var throttle = Throttle(try RateLimit(10, per: .seconds(1)))
        let start = ContinuousClock.now
        let admitted = [
            throttle.admit(job("a"), at: start), throttle.admit(job("b"), at: start),
            throttle.admit(job("c"), at: start + .milliseconds(50)),
        ]
        #expect(admitted == [true, false, false], "the first job goes at once")
        #expect(throttle.dueAt == start + .milliseconds(100))
        let early = throttle.due(at: start + .milliseconds(99))
        #expect(early.isEmpty)
        let late = throttle.due(at: start + .milliseconds(130))
        #expect(late.map(\.descriptor.id) == ["b"], "30 ms late")
        #expect(throttle.dueAt == start + .milliseconds(230), "counted from when b went")
        let early2 = throttle.due(at: start + .milliseconds(229))
        #expect(early2.isEmpty)
        let last = throttle.due(at: start + .milliseconds(230))
        #expect(last.map(\.descriptor.id) == ["c"])
        #expect(throttle.dueAt == nil)
    }

    @Test func noBurstFollowsAPause() throws {
        var throttle = Throttle(try RateLimit(10, per: .seconds(1)))
        let start = ContinuousClock.now
        let admitted = [
            throttle.admit(job("a"), at: start), throttle.admit(job("b"), at: start + .seconds(5)),
            throttle.admit(job("c"), at: start + .seconds(5) + .milliseconds(10)),
        ]
        #expect(admitted == [true, true, false], "a job after a pause goes at once, and the next waits")
        #expect(throttle.dueAt == start + .seconds(5) + .milliseconds(100))
    }

    @Test func releasesHighestPriorityFirstThenInArrivalOrder() throws {
        var throttle = Throttle(try RateLimit(1, per: .seconds(1)))
        let start = ContinuousClock.now
        var admitted = [throttle.admit(job("first"), at: start)]
        for (id, priority) in [("low", JobPriority.low), ("high-1", .high), ("normal", .normal), ("high-2", .high)] {
            admitted.append(throttle.admit(job(id, priority), at: start))
        }
        #expect(admitted == [true, false, false, false, false])
        var order: [String] = []
        for second in 1...4 { order += throttle.due(at: start + .seconds(second)).map(\.descriptor.id) }
        #expect(order == ["high-1", "high-2", "normal", "low"])
    }

    @Test func forgetsJobsThatEndWithoutATurn() throws {
        var throttle = Throttle(try RateLimit(1, per: .seconds(1)))
        let start = ContinuousClock.now
        let cancelled = job("cancelled")
        let admitted = [
            throttle.admit(job("a"), at: start), throttle.admit(cancelled, at: start),
            throttle.admit(job("removed"), at: start), throttle.admit(job("kept"), at: start),
        ]
        #expect(admitted == [true, false, false, false])
        throttle.remove("removed")
        cancelled.operation.cancel(.requested)
        let due = throttle.due(at: start + .seconds(1))
        #expect(due.map(\.descriptor.id) == ["kept"], "a cancelled job takes no turn")
        #expect(throttle.waiting.isEmpty)
    }
}
