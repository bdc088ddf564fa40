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

    @Test func refusesWhatIsNoRate() throws {
        for text in ["", "10", "10/", "/s", "10/w", "ten/s", "10/s/s", "1.5/s", " 10/s"] {
            let error = #expect(throws: WarrenError.self) { try RateLimit(parsing: text) }
            #expect(
                error?.message
                    == "rate limit '\(text)': expected N/s, N/m, N/h or N/d (jobs per second, minute, hour or day)")
        }
        #expect(throws: WarrenError.self) { try RateLimit(parsing: "0/s") }
        #expect(throws: WarrenError.self) { try RateLimit(parsing: "-1/s") }
        #expect(throws: WarrenError.self) { try RateLimit(1, per: .milliseconds(999)) }
        #expect(try RateLimit(parsing: "1000/s").interval == .milliseconds(1))
        let tooFast = #expect(throws: WarrenError.self) { try RateLimit(parsing: "1001/s") }
        #expect(tooFast?.message == "a rate limit of 1001 per 1.0 seconds is above 1,000 jobs a second")
        let huge = #expect(throws: WarrenError.self) { try RateLimit(parsing: "99999999999999999999/d") }
        #expect(huge?.message == "rate limit '99999999999999999999/d': the count is too large")
    }

    private func job(_ id: String, _ priority: JobPriority = .normal) -> InFlightJob {
        TestJobs.waiting(id, priority)
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

    @Test func dropsJobsCancelledWhileTheyWaitWithoutATurn() throws {
        var throttle = Throttle(try RateLimit(1, per: .seconds(1)))
        let start = ContinuousClock.now
        let cancelled = [job("cancelled-1"), job("cancelled-2", .high)]
        let admitted = [
            throttle.admit(job("a"), at: start), throttle.admit(cancelled[0], at: start),
            throttle.admit(job("kept"), at: start), throttle.admit(cancelled[1], at: start),
        ]
        #expect(admitted == [true, false, false, false])
        for job in cancelled { job.operation.cancel(.requested) }
        let due = throttle.due(at: start + .seconds(1))
        #expect(due.map(\.descriptor.id) == ["kept"], "a cancelled job takes no turn")
        #expect(throttle.dueAt == nil, "none waits")
    }

    @Test func keepsManyWaitingJobsInOrder() throws {
        var throttle = Throttle(try RateLimit(1000, per: .seconds(1)))
        var now = ContinuousClock.now
        for index in 0..<5000 { _ = throttle.admit(job("j\(index)", index % 2 == 0 ? .normal : .low), at: now) }
        var order: [String] = []
        while throttle.dueAt != nil {
            now += .milliseconds(1)
            order += throttle.due(at: now).map(\.descriptor.id)
        }
        let expected =
            (1..<5000).filter { $0 % 2 == 0 }.map { "j\($0)" } + (0..<5000).filter { $0 % 2 == 1 }.map { "j\($0)" }
        #expect(order == expected)
    }

    @Test func theStartGateGivesTheTurnToWhoeverClaimsItFirst() {
        let gate = StartGate(interval: .milliseconds(100))
        let now = ContinuousClock.now
        let waits = [
            gate.claim(at: now), gate.claim(at: now), gate.claim(at: now + .milliseconds(50)),
            gate.claim(at: now + .milliseconds(130)), gate.claim(at: now + .milliseconds(200)),
            gate.claim(at: now + .seconds(2)),
        ]
        #expect(waits == [nil, .milliseconds(100), .milliseconds(50), nil, .milliseconds(30), nil])
    }

    /// An operation of a rate-limited type that reaches its thread while the turn is another's, as when it was
    /// handed to a full local queue, waits on its thread for its turn; cancelled while it waits, it ends without
    /// starting.
    @Test(arguments: [false, true])
    func aGatedOperationWaitsForItsTurn(asynchronous: Bool) async throws {
        let collector = ReportCollector()
        func operation(_ id: String, gate: StartGate) -> JobOperation {
            let descriptor = OperationDescriptor(id: id, type: "api", sequence: 1)
            let body: RegisteredOperation.Body =
                asynchronous ? .asynchronous { _, _ in .null } : .blocking { _, _ in .null }
            return JobOperation(
                job: JobContext(descriptor: descriptor, attempt: 1, logger: TestJobs.logger), input: .null, body: body,
                startGate: gate, report: collector.report)
        }
        let queue = OperationQueue()
        let gate = StartGate(interval: .seconds(1))
        let taken = Date()
        #expect(gate.claim() == nil, "a job of the type starts now")
        queue.addOperation(operation("waits", gate: gate))
        let started = try #require(try await collector.waitForReport(of: "waits").startedAt)
        #expect(started.timeIntervalSince(taken) >= 0.999, "started \(started.timeIntervalSince(taken)) s after")

        let otherGate = StartGate(interval: .seconds(60))
        #expect(otherGate.claim() == nil)
        let cancelled = operation("cancelled", gate: otherGate)
        queue.addOperation(cancelled)
        try await waitUntil("the operation waiting for its turn") { cancelled.isExecuting }
        cancelled.cancel(.requested)
        let report = try await collector.waitForReport(of: "cancelled")
        #expect(report.startedAt == nil)
        guard case .cancelled = report.outcome else {
            Issue.record("\(report.outcome)")
            return
        }
    }
}
