import Foundation
import Testing

@testable import Warren

private struct Boom: Error, CustomStringConvertible {
    var description: String { "boom at step 3" }
}

/// The `NSOperation` contract of `JobOperation`, on real Foundation operation queues.
@Suite("JobOperation")
struct JobOperationTests {
    // MARK: - Running

    @Test func aSucceedingOperationReportsItsOutputOnce() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.blocking(input: .string("in"), collector: collector) { input, _ in
            .array([input, .string("out")])
        }
        queue.add(operation)
        let report = try await collector.waitForReport(of: operation.job.jobID)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }

        #expect(report.outcome.output == .array([.string("in"), .string("out")]))
        let startedAt = try #require(report.startedAt)
        #expect(startedAt <= report.finishedAt)
        #expect(collector.all.count == 1)
        #expect(operation.isFinished)
        #expect(!operation.isExecuting)
        #expect(!operation.isCancelled)
    }

    @Test func aThrownJobErrorIsTheFailure() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let error = JobError(code: "quotaExceeded", message: "try tomorrow", retryable: true)
        let operation = TestJobs.blocking(collector: collector) { _, _ in throw error }
        queue.add(operation)
        let report = try await collector.waitForReport(of: operation.job.jobID)
        #expect(report.outcome.error == error)
        #expect(report.startedAt != nil)
    }

    @Test func anyOtherThrownErrorIsAHandlerError() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.blocking(collector: collector) { _, _ in throw Boom() }
        queue.add(operation)
        let report = try await collector.waitForReport(of: operation.job.jobID)
        #expect(report.outcome.error == JobError(code: "handlerError", message: "boom at step 3"))
    }

    @Test func asynchronousCodeReportsItsOutputAndErrors() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 2)
        let succeeding = TestJobs.asynchronous(collector: collector) { _, _ in
            await Task.yield()
            return .bool(true)
        }
        let failing = TestJobs.asynchronous(collector: collector) { _, _ in
            await Task.yield()
            throw Boom()
        }
        queue.add(succeeding)
        queue.add(failing)
        #expect(try await collector.waitForReport(of: succeeding.job.jobID).outcome.output == .bool(true))
        #expect(try await collector.waitForReport(of: failing.job.jobID).outcome.error?.code == "handlerError")
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
    }

    @Test func registeredBuiltInsRunThroughTheOperation() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 2)
        let sum = try TestJobs.registered(
            "sum", in: .demo, input: .parse(#"{"numbers": [1, 2, 3]}"#), collector: collector)
        let bad = try TestJobs.registered(
            "sum", in: .demo, input: .parse(#"{"numbers": "1,2,3"}"#), collector: collector)
        queue.add(sum)
        queue.add(bad)
        #expect(try await collector.waitForReport(of: sum.job.jobID).outcome.output?["sum"] == .number(6))
        #expect(try await collector.waitForReport(of: bad.job.jobID).outcome.error?.code == "invalidInput")
    }

    @Test func theOperationCarriesTheJobsPriorityAndName() {
        let collector = ReportCollector()
        let operation = TestJobs.blocking(id: "job-42", priority: .high, collector: collector) { _, _ in .null }
        #expect(operation.queuePriority == .high)
        #expect(operation.name == "job-42")
        #expect(operation.isAsynchronous)
        #expect(!operation.isExecuting)
        #expect(!operation.isFinished)
    }

    @Test func theContextDescribesTheJob() {
        let descriptor = TestJobs.descriptor(
            id: "j", type: "sum", priority: .low, sequence: 77, key: "list", deadline: Date(timeIntervalSince1970: 5))
        let job = JobContext(descriptor: descriptor, attempt: 3, logger: TestJobs.logger)
        #expect(job.jobID == "j")
        #expect(job.type == "sum")
        #expect(job.key == "list")
        #expect(job.sequence == 77)
        #expect(job.priority == .low)
        #expect(job.attempt == 3)
        #expect(job.deadline == Date(timeIntervalSince1970: 5))
        #expect(job.logger[metadataKey: "job"] == "j")
        #expect(job.logger[metadataKey: "type"] == "sum")
        #expect(job.logger[metadataKey: "attempt"] == "3")
        #expect(!job.isCancelled)
        #expect(throws: Never.self) { try job.checkCancellation() }
    }

    @Test func theFirstCancellationOfAContextWins() {
        let job = TestJobs.context()
        #expect(job.markCancelled(Cancellation(reason: "superseded", message: "newer")))
        #expect(!job.markCancelled(.requested))
        #expect(job.cancellation?.reason == "superseded")
        #expect(throws: CancellationError.self) { try job.checkCancellation() }
    }

    // MARK: - Cancelled before it starts

    @Test func cancelledWhileWaitingItNeverRunsAndReportsOnce() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let ran = Locked(false)
        queue.isSuspended = true
        let operation = TestJobs.blocking(collector: collector) { _, _ in
            ran.withLock { $0 = true }
            return .null
        }
        queue.add(operation)
        operation.cancel(Cancellation(reason: "superseded", message: "a newer job"))
        // Reported at once, before the queue even looked at it.
        #expect(collector.all.count == 1)
        queue.isSuspended = false
        try await waitUntil("the cancelled operation to leave the queue") { queue.operationCount == 0 }

        #expect(!ran.value)
        #expect(operation.isFinished)
        #expect(operation.isCancelled)
        let reports = collector.reports(for: operation.job.jobID)
        #expect(reports.count == 1)
        let report = try #require(reports.first)
        #expect(report.outcome.cancellation == Cancellation(reason: "superseded", message: "a newer job"))
        #expect(report.startedAt == nil)
    }

    @Test func cancelledBeforeBeingQueuedItNeverRuns() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let ran = Locked(false)
        let operation = TestJobs.blocking(collector: collector) { _, _ in
            ran.withLock { $0 = true }
            return .null
        }
        operation.cancel()
        queue.add(operation)
        try await waitUntil("the cancelled operation to leave the queue") { queue.operationCount == 0 }
        #expect(!ran.value)
        #expect(collector.all.count == 1)
        #expect(collector.all.first?.outcome.cancellation == .requested)
        #expect(collector.all.first?.startedAt == nil)
    }

    @Test func cancellingTwiceReportsOnceWithTheFirstReason() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        queue.isSuspended = true
        let operation = TestJobs.blocking(collector: collector) { _, _ in .null }
        queue.add(operation)
        operation.cancel(Cancellation(reason: "deadline", message: "too late"))
        operation.cancel(.requested)
        operation.cancel()
        queue.isSuspended = false
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
        #expect(collector.all.count == 1)
        #expect(collector.all.first?.outcome.cancellation?.reason == "deadline")
    }

    @Test func anAsynchronousOperationCancelledWhileWaitingNeverRuns() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let ran = Locked(false)
        queue.isSuspended = true
        let operation = TestJobs.asynchronous(collector: collector) { _, _ in
            ran.withLock { $0 = true }
            return .null
        }
        queue.add(operation)
        operation.cancel()
        queue.isSuspended = false
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
        #expect(!ran.value)
        #expect(collector.all.count == 1)
        #expect(collector.all.first?.startedAt == nil)
    }

    @Test func aPassedDeadlineCancelsInsteadOfRunning() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let ran = Locked(false)
        let operation = TestJobs.blocking(deadline: Date(timeIntervalSinceNow: -1), collector: collector) { _, _ in
            ran.withLock { $0 = true }
            return .null
        }
        queue.add(operation)
        let report = try await collector.waitForReport(of: operation.job.jobID)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
        #expect(!ran.value)
        #expect(report.outcome.cancellation?.reason == "deadline")
        #expect(report.outcome.cancellation?.message == "deadline passed before the job started")
        #expect(report.startedAt == nil)
        // Never counted as started, not even for a moment: the worker names a started job's cancellation otherwise.
        #expect(!operation.hasStarted)
        #expect(operation.job.isCancelled)
        #expect(collector.all.count == 1)
    }

    @Test func aFutureDeadlineLetsTheJobRun() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.blocking(deadline: Date(timeIntervalSinceNow: 3600), collector: collector) { _, _ in
            .string("ran")
        }
        queue.add(operation)
        #expect(try await collector.waitForReport(of: operation.job.jobID).outcome.output == .string("ran"))
    }

    // MARK: - Cancelled while it runs

    @Test func aBlockingOperationThatChecksIsCancelledEndsCancelled() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let operation = TestJobs.blocking(collector: collector) { _, job in
            started.withLock { $0 = true }
            // Work in steps, checking between them, as AdderOperation does; bounded so a bug cannot hang the run.
            let limit = Date(timeIntervalSinceNow: 30)
            while !job.isCancelled, Date() < limit { Thread.sleep(forTimeInterval: 0.001) }
            try job.checkCancellation()
            return .string("finished anyway")
        }
        queue.add(operation)
        try await waitUntil("the operation to start") { started.value }
        #expect(operation.isExecuting)
        let cancellation = Cancellation(reason: "superseded", message: "superseded by sequence 9")
        operation.cancel(cancellation)
        let report = try await collector.waitForReport(of: operation.job.jobID)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }

        #expect(report.outcome.cancellation == cancellation)
        #expect(report.startedAt != nil)
        #expect(collector.all.count == 1)
        #expect(operation.isFinished)
    }

    @Test func aJobCancelledWhileRunningEndsCancelledEvenIfItReturns() async throws {
        // Its result is no longer wanted: ListAdder's "is this still the operation I want?".
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let proceed = Gate()
        let operation = TestJobs.blocking(collector: collector) { _, _ in
            started.withLock { $0 = true }
            proceed.wait()
            return .string("stale sum")
        }
        queue.add(operation)
        try await waitUntil("the operation to start") { started.value }
        operation.cancel()
        proceed.open()
        let report = try await collector.waitForReport(of: operation.job.jobID)
        #expect(report.outcome.cancellation == .requested)
        #expect(report.startedAt != nil)
    }

    @Test func aJobCancelledWhileRunningEndsCancelledEvenIfItFails() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let proceed = Gate()
        let operation = TestJobs.blocking(collector: collector) { _, _ in
            started.withLock { $0 = true }
            proceed.wait()
            throw Boom()
        }
        queue.add(operation)
        try await waitUntil("the operation to start") { started.value }
        operation.cancel()
        proceed.open()
        #expect(try await collector.waitForReport(of: operation.job.jobID).outcome.cancellation == .requested)
    }

    @Test func aJobCancelledForItsTimeLimitFailsHoweverItReturns() async throws {
        // Its code ignores the cancellation and returns a value: it did not do its work in time all the same.
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let proceed = Gate()
        let operation = TestJobs.blocking(collector: collector) { _, _ in
            started.withLock { $0 = true }
            proceed.wait()
            return .string("late")
        }
        #expect(operation.startedAt == nil)
        queue.add(operation)
        try await waitUntil("the operation to start") { started.value }
        #expect(operation.startedAt != nil)
        operation.cancel(Cancellation(reason: "timeLimit", message: "ran longer than 1 s"))
        proceed.open()
        let report = try await collector.waitForReport(of: operation.job.jobID)
        #expect(report.outcome.error == JobError(code: "timeLimit", message: "ran longer than 1 s", retryable: false))
        #expect(report.startedAt != nil)
    }

    @Test func itSaysWhenItsCodeStartsAndOnlyThen() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let starts = Locked(0)
        let gate = Gate()
        let first = JobOperation(
            job: TestJobs.context(), input: .null,
            body: .blocking({ _, _ in
                gate.wait()
                return .null
            }),
            started: { starts.withLock { $0 += 1 } }, report: collector.report)
        let second = JobOperation(
            job: TestJobs.context(), input: .null, body: .blocking({ _, _ in .null }),
            started: { starts.withLock { $0 += 1 } }, report: collector.report)
        queue.add([first, second])
        try await waitUntil("the first to start") { starts.value == 1 }
        second.cancel()
        gate.open()
        _ = try await collector.waitForReports(2)
        #expect(starts.value == 1, "the second, cancelled while it waited, never started")
    }

    @Test func anAsynchronousJobCancelledForItsTimeLimitFails() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.asynchronous(collector: collector) { _, _ in
            try await Task.sleep(for: .seconds(60))
            return .null
        }
        queue.add(operation)
        try await waitUntil("the operation to start") { operation.hasStarted }
        operation.cancel(Cancellation(reason: "timeLimit", message: "ran longer than 1 s"))
        let report = try await collector.waitForReport(of: operation.job.jobID)
        #expect(report.outcome.error?.code == "timeLimit")
    }

    @Test func aRegisteredAsynchronousOperationCancelledWhileSleepingEndsCancelled() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        var registry = OperationRegistry()
        registry.register(
            "nap",
            asynchronous: { (input: SleepInput, _: JobContext) -> String in
                started.withLock { $0 = true }
                try await Task.sleep(for: .seconds(input.seconds))
                return "woke up"
            })
        let operation = try TestJobs.registered(
            "nap", in: registry, input: .parse(#"{"seconds": 3600}"#), collector: collector)
        queue.add(operation)
        try await waitUntil("the operation to start") { started.value }
        #expect(operation.isExecuting)
        operation.cancel(Cancellation(reason: "requested", message: "stop napping"))
        let report = try await collector.waitForReport(of: operation.job.jobID)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }

        #expect(report.outcome.cancellation == Cancellation(reason: "requested", message: "stop napping"))
        #expect(report.startedAt != nil)
        #expect(collector.all.count == 1)
    }

    @Test func theBuiltInSleepIsCancellableAsSoonAsItExecutes() async throws {
        // Cancel the moment the queue has started it: the task may not be stored yet, which start() must handle.
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = try TestJobs.registered(
            "sleep", in: .demo, input: .parse(#"{"seconds": 3600}"#), collector: collector)
        queue.add(operation)
        try await waitUntil("the operation to execute") { operation.isExecuting || operation.isFinished }
        operation.cancel()
        let report = try await collector.waitForReport(of: operation.job.jobID)
        #expect(report.outcome.cancellation == .requested)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
    }

    @Test func anAsynchronousOperationThatChecksTheJobEndsCancelled() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let started = Locked(false)
        let operation = TestJobs.asynchronous(collector: collector) { _, job in
            started.withLock { $0 = true }
            let limit = ContinuousClock.now + .seconds(30)
            while !job.isCancelled, ContinuousClock.now < limit {
                // This code ignores task cancellation (try?) and relies on the job alone.
                try? await Task.sleep(for: .milliseconds(1))
            }
            return .string("done")
        }
        queue.add(operation)
        try await waitUntil("the operation to start") { started.value }
        operation.cancel()
        #expect(try await collector.waitForReport(of: operation.job.jobID).outcome.cancellation == .requested)
    }

    @Test func cancellationErrorFromCodeThatWasNotCancelledFailsTheJob() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.blocking(collector: collector) { _, _ in throw CancellationError() }
        queue.add(operation)
        let outcome = try await collector.waitForReport(of: operation.job.jobID).outcome
        #expect(outcome.cancellation == nil)
        #expect(
            outcome.error
                == JobError(
                    code: "handlerError", message: "the handler threw CancellationError, but the job was not cancelled")
        )
    }

    @Test func aLocalizedErrorFailsTheJobWithItsDescription() async throws {
        struct Refused: LocalizedError {
            var errorDescription: String? { "the thumbnail service refused the image" }
        }
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.blocking(collector: collector) { _, _ in throw Refused() }
        queue.add(operation)
        let outcome = try await collector.waitForReport(of: operation.job.jobID).outcome
        #expect(outcome.error == JobError(code: "handlerError", message: "the thumbnail service refused the image"))
    }

    @Test func cancellingAFinishedOperationReportsNothingMore() async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: 1)
        let operation = TestJobs.blocking(collector: collector) { _, _ in .number(1) }
        queue.add(operation)
        _ = try await collector.waitForReport(of: operation.job.jobID)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
        operation.cancel()
        #expect(collector.all.count == 1)
        #expect(collector.all.first?.outcome.isSucceeded == true)
    }

    // MARK: - Exactly once, under races

    @Test(arguments: [1, 4])
    func everyOperationReportsExactlyOnceWhateverTheCancellationTiming(width: Int) async throws {
        let collector = ReportCollector()
        let queue = LocalQueue(name: "test", width: width)
        let count = 60
        var operations: [JobOperation] = []
        for index in 0..<count {
            let operation: JobOperation
            if index.isMultiple(of: 2) {
                operation = TestJobs.blocking(collector: collector) { _, job in
                    for _ in 0..<5 {
                        try job.checkCancellation()
                        Thread.sleep(forTimeInterval: 0.000_5)
                    }
                    return .number(Double(index))
                }
            } else {
                operation = TestJobs.asynchronous(collector: collector) { _, _ in
                    try await Task.sleep(for: .milliseconds(2))
                    return .number(Double(index))
                }
            }
            operations.append(operation)
            queue.add(operation)
        }
        // Cancel every third one, wherever it is by then: waiting, starting, executing or finished.
        for (index, operation) in operations.enumerated() where index.isMultiple(of: 3) {
            operation.cancel()
            await Task.yield()
        }
        try await collector.waitForReports(count, timeout: .seconds(30))
        try await waitUntil("the queue to drain", timeout: .seconds(30)) { queue.operationCount == 0 }

        let reports = collector.all
        #expect(reports.count == count)
        let ids = Dictionary(grouping: reports, by: \.jobID)
        for (index, operation) in operations.enumerated() {
            let mine = ids[operation.job.jobID] ?? []
            #expect(mine.count == 1, "job \(index) reported \(mine.count) times")
            #expect(operation.isFinished, "job \(index) finished")
            guard let report = mine.first else { continue }
            if index.isMultiple(of: 3) {
                // A cancel can lose the race only to a job that already ended.
                if report.outcome.cancellation == nil {
                    #expect(report.outcome.output == .number(Double(index)))
                }
            } else {
                #expect(report.outcome.output == .number(Double(index)), "job \(index): \(report.outcome)")
            }
        }
    }
}
