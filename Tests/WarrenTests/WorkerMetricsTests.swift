import AMQP
import CoreMetrics
import Foundation
import MetricsTestKit
import Testing

@testable import Warren

@Suite("WorkerMetrics")
struct WorkerMetricsTests {
    private func result(
        type: String?, status: JobStatus, receivedAt: Date = Date(), startedAt: Date? = nil, finishedAt: Date = Date()
    ) -> JobResult {
        JobResult(
            jobID: "j", type: type, sequence: 1, key: nil, status: status, attempt: 1, redelivered: false,
            workerID: "w", timings: JobTimings(receivedAt: receivedAt, startedAt: startedAt, finishedAt: finishedAt))
    }

    @Test func countsResultsOfTypesTheWorkerDoesNotRunUnderOther() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend, operationTypes: ["echo"])
        metrics.jobFinished(result(type: "echo", status: .succeeded, startedAt: Date()))
        metrics.jobFinished(result(type: "made-up-\(UUID())", status: .failed))
        metrics.jobFinished(result(type: nil, status: .failed))
        #expect(
            try backend.expectCounter("warren_jobs_total", [("type", "echo"), ("status", "succeeded")]).totalValue == 1)
        #expect(
            try backend.expectCounter("warren_jobs_total", [("type", "(other)"), ("status", "failed")]).totalValue == 2)
        #expect(backend.counters(label: "warren_jobs_total").count == 2)
        #expect(backend.timers(label: "warren_job_run_seconds").map(\.dimensions.first?.1) == ["echo"])
    }

    @Test func countsJobsByTypeAndStatusAndTimesThoseThatRan() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        metrics.jobFinished(type: "echo", status: .succeeded, runTime: .milliseconds(3), queueWait: .milliseconds(2))
        metrics.jobFinished(type: "echo", status: .succeeded, runTime: .milliseconds(5), queueWait: .zero)
        metrics.jobFinished(type: "echo", status: .cancelled, runTime: nil, queueWait: nil)
        let received = Date(timeIntervalSince1970: 100)
        metrics.jobFinished(
            result(
                type: "sum", status: .failed, receivedAt: received, startedAt: received + 0.25,
                finishedAt: received + 1.75))

        let succeeded = try backend.expectCounter("warren_jobs_total", [("type", "echo"), ("status", "succeeded")])
        #expect(succeeded.totalValue == 2)
        #expect(
            try backend.expectCounter("warren_jobs_total", [("type", "echo"), ("status", "cancelled")]).totalValue == 1)
        #expect(
            try backend.expectCounter("warren_jobs_total", [("type", "sum"), ("status", "failed")]).totalValue == 1)
        #expect(try backend.expectTimer("warren_job_run_seconds", [("type", "echo")]).values == [3_000_000, 5_000_000])
        #expect(try backend.expectTimer("warren_job_wait_seconds", [("type", "echo")]).values == [2_000_000, 0])
        #expect(try backend.expectTimer("warren_job_run_seconds", [("type", "sum")]).values == [1_500_000_000])
        #expect(try backend.expectTimer("warren_job_wait_seconds", [("type", "sum")]).values == [250_000_000])
    }

    @Test func timesAnAttemptThatFailedAndWasRetried() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        let received = Date(timeIntervalSince1970: 100)
        metrics.retried(
            type: "fail", timings: JobTimings(receivedAt: received, startedAt: received + 0.5, finishedAt: received + 2)
        )
        #expect(try backend.expectCounter("warren_job_retries_total", [("type", "fail")]).totalValue == 1)
        #expect(try backend.expectTimer("warren_job_run_seconds", [("type", "fail")]).values == [1_500_000_000])
        #expect(try backend.expectTimer("warren_job_wait_seconds", [("type", "fail")]).values == [500_000_000])
        #expect(backend.counters(label: "warren_jobs_total").isEmpty, "the job has not ended")
    }

    @Test func countsDeadLettersReconnectsDeadWorkersAndReportsPrefetch() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        metrics.deadLettered(reason: "unknownType")
        metrics.deadLettered(reason: "unknownType")
        metrics.deadLettered(reason: "oversized")
        metrics.reconnected()
        metrics.deadWorkerReported()
        metrics.jobRanAlone()
        metrics.jobRanAlone()
        metrics.prefetch(10)
        metrics.prefetch(20)
        #expect(try backend.expectCounter("warren_dead_lettered_total", [("reason", "unknownType")]).totalValue == 2)
        #expect(try backend.expectCounter("warren_dead_lettered_total", [("reason", "oversized")]).totalValue == 1)
        #expect(try backend.expectCounter("warren_reconnects_total").totalValue == 1)
        #expect(try backend.expectCounter("warren_dead_workers_reported_total").totalValue == 1)
        #expect(try backend.expectCounter("warren_jobs_run_alone_total").totalValue == 2)
        #expect(try backend.expectGauge("warren_prefetch").lastValue == 20)
    }

    @Test func deadLetterReasonsPastTheLimitShareOneLabel() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        // A handler's codes are the job's to choose: a producer must not grow the worker's series without end.
        for number in 0..<(WorkerMetrics.maxDeadLetterReasons + 50) { metrics.deadLettered(reason: "code-\(number)") }
        metrics.deadLettered(reason: "code-0")
        #expect(try backend.expectCounter("warren_dead_lettered_total", [("reason", "code-0")]).totalValue == 2)
        let other = try backend.expectCounter("warren_dead_lettered_total", [("reason", WorkerMetrics.otherType)])
        #expect(other.totalValue == 51)
        #expect(throws: (any Error).self) {
            try backend.expectCounter(
                "warren_dead_lettered_total", [("reason", "code-\(WorkerMetrics.maxDeadLetterReasons)")])
        }
    }

    @Test func reportsTheJobsWaitingInTheWorkerByWhatTheyWaitFor() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        metrics.jobsWaitingInWorker([.waitingForDependencies: 3, .waitingForTurn: 2, .waitingToRunAlone: 0])
        metrics.jobsWaitingInWorker([.waitingForDependencies: 1, .waitingForTurn: 2, .waitingToRunAlone: 0])
        #expect(
            try backend.expectGauge("warren_jobs_waiting_in_worker", [("state", "waitingForDependencies")]).lastValue
                == 1)
        #expect(try backend.expectGauge("warren_jobs_waiting_in_worker", [("state", "waitingForTurn")]).lastValue == 2)
        #expect(
            try backend.expectGauge("warren_jobs_waiting_in_worker", [("state", "waitingToRunAlone")]).lastValue == 0)
    }

    @Test func samplesTheExecutingAndWaitingOperationsOfWatchedLocalQueues() async throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        let name = "metrics-\(UUID().uuidString.prefix(8))"
        let collector = ReportCollector()
        let gate = Gate()
        let queue = LocalQueue(name: name, width: 1)
        metrics.watch([queue])
        let executing = try backend.expectGauge("warren_local_queue_executing", [("queue", name)])
        let waiting = try backend.expectGauge("warren_local_queue_waiting", [("queue", name)])
        let width = try backend.expectGauge("warren_local_queue_width", [("queue", name)])
        #expect(executing.lastValue == 0)
        #expect(waiting.lastValue == 0)
        #expect(width.lastValue == 1)

        let started = Gate()
        queue.add(
            TestJobs.blocking(collector: collector) { _, _ in
                started.open()
                gate.wait()
                return .null
            })
        queue.add(TestJobs.blocking(collector: collector) { _, _ in .null })
        queue.add(TestJobs.blocking(collector: collector) { _, _ in .null })
        #expect(started.wait())
        #expect(queue.executingAndWaiting == (1, 2))
        WorkerMetrics.sampleLocalQueues()
        #expect(executing.lastValue == 1)
        #expect(waiting.lastValue == 2)

        gate.open()
        try await collector.waitForReports(3)
        try await waitUntil("the queue to drain") { queue.operationCount == 0 }
        queue.resize(to: 4)
        WorkerMetrics.sampleLocalQueues()
        #expect(executing.lastValue == 0)
        #expect(waiting.lastValue == 0)
        #expect(width.lastValue == 4)
    }

    // MARK: - Queue latency

    private func delivery(headers: AMQPTable = [:]) -> Delivery {
        Delivery(
            channel: 1, consumerTag: "c", deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q",
            properties: MessageProperties(headers: headers), body: [])
    }

    @Test func recordsQueueLatencyAsTheJobStartsByQueueAndType() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend, operationTypes: ["echo"])
        let created = Date().addingTimeInterval(-90)
        let descriptor = OperationDescriptor(id: "j", type: "echo", sequence: 1, createdAt: created)
        let inner = Locked(0)
        let started = try #require(
            metrics.recordingQueueLatency(of: descriptor, delivery(), from: "emails") { inner.withLock { $0 += 1 } })
        #expect(backend.timers(label: "warren_job_queue_latency_seconds").allSatisfy { $0.values.isEmpty })
        started()
        let timer = try backend.expectTimer(
            "warren_job_queue_latency_seconds", [("queue", "emails"), ("type", "echo")])
        #expect(timer.values.count == 1)
        // At least the 90 s since its creation, and less than a day more.
        #expect((90_000_000_000..<86_400_000_000_000).contains(timer.values[0]))
        #expect(inner.withLock { $0 } == 1, "the closure it wraps runs too")
    }

    @Test func countsALatencyFromAClockAheadAsZero() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        let ahead = Date().addingTimeInterval(60)
        let descriptor = OperationDescriptor(id: "j", type: "echo", sequence: 1, createdAt: ahead)
        let started = try #require(metrics.recordingQueueLatency(of: descriptor, delivery(), from: "q", then: nil))
        started()
        let timer = try backend.expectTimer("warren_job_queue_latency_seconds", [("queue", "q"), ("type", "echo")])
        #expect(timer.values == [0])
    }

    @Test func measuresFromTheLatestOfCreationNotBeforeRetryAndRequeue() {
        let created = Date(timeIntervalSince1970: 1_000)
        let plain = OperationDescriptor(id: "j", type: "echo", sequence: 1, createdAt: created)
        #expect(WorkerMetrics.due(of: plain, delivery()) == created)
        let scheduled = OperationDescriptor(
            id: "j", type: "echo", sequence: 1, notBefore: created + 60, createdAt: created)
        #expect(WorkerMetrics.due(of: scheduled, delivery()) == created + 60)
        let retried = delivery(headers: [Topology.notBeforeHeader: .int(1_120_000)])
        #expect(WorkerMetrics.due(of: scheduled, retried) == created + 120)
        let requeued = delivery(headers: [Topology.requeuedAtHeader: .int(1_300_000)])
        #expect(WorkerMetrics.due(of: plain, requeued) == created + 300)
        let unknown = OperationDescriptor(id: "j", type: "echo", sequence: 1, createdAt: nil)
        #expect(WorkerMetrics.due(of: unknown, delivery()) == nil)
        let metrics = WorkerMetrics(factory: TestMetrics())
        #expect(metrics.recordingQueueLatency(of: unknown, delivery(), from: "q", then: nil) == nil)
    }

    @Test func countsLatencyOfTypesTheWorkerDoesNotRunUnderOther() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend, operationTypes: ["echo"])
        metrics.queueLatency(queue: "q", type: "made-up", .seconds(2))
        metrics.queueLatency(queue: "q", type: "echo", .seconds(1))
        let other = try backend.expectTimer(
            "warren_job_queue_latency_seconds", [("queue", "q"), ("type", "(other)")])
        #expect(other.values == [2_000_000_000])
        #expect(backend.timers(label: "warren_job_queue_latency_seconds").count == 2)
    }

    @Test func costsAJobNothingWithoutABackend() {
        let metrics = WorkerMetrics(factory: NOOPMetricsHandler.instance)
        let descriptor = OperationDescriptor(id: "j", type: "echo", sequence: 1, createdAt: Date())
        #expect(metrics.recordingQueueLatency(of: descriptor, delivery(), from: "q", then: nil) == nil)
    }

    @Test func findsEachQueuesTimerWhenJobsAlternate() throws {
        let backend = TestMetrics()
        let metrics = WorkerMetrics(factory: backend)
        for (queue, seconds) in [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5)] {
            metrics.queueLatency(queue: queue, type: "echo", .seconds(seconds))
        }
        let a = try backend.expectTimer("warren_job_queue_latency_seconds", [("queue", "a"), ("type", "echo")])
        let b = try backend.expectTimer("warren_job_queue_latency_seconds", [("queue", "b"), ("type", "echo")])
        #expect(a.values == [1_000_000_000, 3_000_000_000, 4_000_000_000])
        #expect(b.values == [2_000_000_000, 5_000_000_000])
    }

    @Test func reportsItsBuildAmongTheCountersItStarts() throws {
        let backend = TestMetrics()
        WorkerMetrics(factory: backend).startCounters()
        #expect(try backend.expectGauge("warren_build_info", [("version", WarrenVersion.string)]).lastValue == 1)
    }

}
