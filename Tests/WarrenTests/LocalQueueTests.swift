import Foundation
import Testing

@testable import Warren

/// Counts how many operations run at once and remembers the most.
///
/// Thread safety: locked.
private final class ConcurrencyMeter: Sendable {
    private let state = Locked((current: 0, most: 0))

    func enter() {
        state.withLock { state in
            state.current += 1
            state.most = max(state.most, state.current)
        }
    }

    func leave() {
        state.withLock { $0.current -= 1 }
    }

    var current: Int { state.value.current }
    var most: Int { state.value.most }
}

@Suite("LocalQueue")
struct LocalQueueTests {
    @Test func keepsItsNameAndWidth() {
        let queue = LocalQueue(name: "io", width: 16)
        #expect(queue.name == "io")
        #expect(queue.width == 16)
        #expect(queue.operationCount == 0)
        #expect(!queue.isSuspended)
    }

    @Test func aWidthOneQueueStartsReadyOperationsInPriorityOrder() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let runOrder = Locked<[String]>([])
        queue.isSuspended = true
        // Two of each priority, shuffled; within a priority, the order they were added in.
        var added: [(priority: JobPriority, label: String)] = []
        for round in 0..<2 {
            for priority in JobPriority.allCases { added.append((priority, "\(priority.rawValue)-\(round)")) }
        }
        var generator = SystemRandomNumberGenerator()
        added.shuffle(using: &generator)
        for (priority, label) in added {
            queue.add(
                TestJobs.blocking(priority: priority, collector: collector) { _, _ in
                    runOrder.withLock { $0.append(label) }
                    return .null
                })
        }
        #expect(queue.operationCount == added.count)
        queue.isSuspended = false
        try await collector.waitForReports(added.count)

        let expected = JobPriority.allCases.reversed().flatMap { priority in
            added.filter { $0.priority == priority }.map(\.label)
        }
        #expect(runOrder.value == expected, "added in the order \(added.map(\.label))")
    }

    @Test func aSuspendedQueueLetsExecutingOperationsFinish() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let proceed = Gate()
        let first = TestJobs.blocking(collector: collector) { _, _ in
            started.withLock { $0 = true }
            proceed.wait()
            return .string("first")
        }
        let second = TestJobs.blocking(collector: collector) { _, _ in .string("second") }
        queue.add(first)
        queue.add(second)
        try await waitUntil("the first operation to start") { started.value }
        queue.isSuspended = true
        #expect(queue.isSuspended)
        proceed.open()
        #expect(try await collector.waitForReport(of: first.job.jobID).outcome.output == .string("first"))
        // The second waits for the queue to resume; once it does, it runs.
        #expect(collector.reports(for: second.job.jobID).isEmpty)
        queue.isSuspended = false
        #expect(try await collector.waitForReport(of: second.job.jobID).outcome.output == .string("second"))
    }

    @Test(arguments: [1, 2, 3])
    func neverRunsMoreThanItsWidthAtOnce(width: Int) async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: width)
        let meter = ConcurrencyMeter()
        let count = 6 * width + 2
        for _ in 0..<count {
            queue.add(
                TestJobs.blocking(collector: collector) { _, _ in
                    meter.enter()
                    defer { meter.leave() }
                    Thread.sleep(forTimeInterval: 0.005)
                    return .null
                })
        }
        try await collector.waitForReports(count, timeout: .seconds(30))
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
        #expect(meter.most <= width)
        #expect(meter.most >= 1)
        #expect(meter.current == 0)
    }

    @Test func asynchronousOperationsCountAgainstTheWidthWhileTheyAwait() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 2)
        let meter = ConcurrencyMeter()
        let count = 12
        for index in 0..<count {
            let code: @Sendable (JSONValue, JobContext) async throws -> JSONValue = { _, _ in
                meter.enter()
                defer { meter.leave() }
                try await Task.sleep(for: .milliseconds(5))
                return .null
            }
            let blocking: @Sendable (JSONValue, JobContext) throws -> JSONValue = { _, _ in
                meter.enter()
                defer { meter.leave() }
                Thread.sleep(forTimeInterval: 0.005)
                return .null
            }
            queue.add(
                index.isMultiple(of: 2)
                    ? TestJobs.asynchronous(collector: collector, code)
                    : TestJobs.blocking(collector: collector, blocking))
        }
        try await collector.waitForReports(count, timeout: .seconds(30))
        #expect(meter.most <= 2)
        #expect(collector.all.allSatisfy { $0.outcome.isSucceeded })
    }

    @Test func aWidthTwoQueueRunsTwoAtOnce() async throws {
        // Each operation waits until both are inside: with a width of two they meet, with one they could not.
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 2)
        let meter = ConcurrencyMeter()
        for _ in 0..<2 {
            queue.add(
                TestJobs.blocking(collector: collector) { _, _ in
                    meter.enter()
                    let limit = Date(timeIntervalSinceNow: 10)
                    while meter.most < 2, Date() < limit { Thread.sleep(forTimeInterval: 0.001) }
                    meter.leave()
                    return .bool(meter.most == 2)
                })
        }
        let reports = try await collector.waitForReports(2, timeout: .seconds(30))
        #expect(reports.allSatisfy { $0.outcome.output == .bool(true) })
    }

    @Test func wideningStartsWaitingOperationsAtOnceAndNarrowingLetsExecutingOnesFinish() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let meter = ConcurrencyMeter()
        let gate = Gate()
        for _ in 0..<4 {
            queue.add(
                TestJobs.blocking(collector: collector) { _, _ in
                    meter.enter()
                    gate.wait()
                    meter.leave()
                    return .null
                })
        }
        try await waitUntil("one operation to start") { meter.current == 1 }
        queue.resize(to: 3)
        #expect(queue.width == 3)
        try await waitUntil("three operations to run at once") { meter.current == 3 }
        queue.resize(to: 1)
        #expect(meter.current == 3, "executing operations go on")
        gate.open()
        _ = try await collector.waitForReports(4, timeout: .seconds(30))
        #expect(meter.most == 3)
    }

    @Test func afterNarrowingTheNextOperationsStartOneAtATime() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 4)
        queue.resize(to: 1)
        let meter = ConcurrencyMeter()
        for _ in 0..<4 {
            queue.add(
                TestJobs.blocking(collector: collector) { _, _ in
                    meter.enter()
                    Thread.sleep(forTimeInterval: 0.01)
                    meter.leave()
                    return .null
                })
        }
        _ = try await collector.waitForReports(4, timeout: .seconds(30))
        #expect(meter.most == 1)
    }

    @Test func aWideQueueRunsAsManyBlockingOperationsAtOnceAsItIsWideAndNarrowsAtOnce() async throws {
        // libdispatch's pool alone adds about two threads a second while its threads block: 32 blocking operations
        // would take a quarter of a minute to run at once, and operations it was handed before the queue narrowed
        // would start after it did.
        let collector = ReportCollector()
        let queue = LocalQueue(name: "wide", width: 32)
        let all = ConcurrencyMeter()
        let afterNarrowing = ConcurrencyMeter()
        let narrowed = Locked(false)
        let gate = Gate()
        for _ in 0..<40 {
            queue.add(
                TestJobs.blocking(collector: collector) { _, _ in
                    all.enter()
                    let late = narrowed.value
                    if late { afterNarrowing.enter() }
                    gate.wait()
                    if late { afterNarrowing.leave() }
                    all.leave()
                    return .null
                })
        }
        try await waitUntil("32 blocking operations to run at once") { all.current == 32 }
        queue.resize(to: 1)
        narrowed.withLock { $0 = true }
        gate.open()
        _ = try await collector.waitForReports(40, timeout: .seconds(60))
        #expect(all.most == 32)
        #expect(afterNarrowing.most == 1, "the eight that waited started one at a time")
    }

    @Test func operationCountIncludesWaitingAndExecutingOperations() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let proceed = Gate()
        queue.add(
            TestJobs.blocking(collector: collector) { _, _ in
                started.withLock { $0 = true }
                proceed.wait()
                return .null
            })
        queue.add(TestJobs.blocking(collector: collector) { _, _ in .null })
        try await waitUntil("the first operation to start") { started.value }
        #expect(queue.operationCount == 2)
        proceed.open()
        try await collector.waitForReports(2)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
    }
}
