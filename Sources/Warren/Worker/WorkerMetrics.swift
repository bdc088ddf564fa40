import AMQP
import Foundation
import Metrics
import Synchronization

/// What a worker counts and measures, recorded through the swift-metrics facade: whatever backend the process
/// bootstrapped with `MetricsSystem.bootstrap` receives it (`warren worker --metrics-port` bootstraps Prometheus);
/// without one, every call is a no-op.
///
/// | metric | kind | labels |
/// | --- | --- | --- |
/// | `warren_jobs_total` | counter | `type`, `status` (`succeeded`, `failed`, `cancelled`) |
/// | `warren_job_run_seconds` | timer (histogram): each attempt that started | `type` |
/// | `warren_job_wait_seconds` | timer (histogram): received → started | `type` |
/// | `warren_job_queue_latency_seconds` | timer (histogram): due (created, or later) → started | `queue`, `type` |
/// | `warren_local_queue_executing`, `warren_local_queue_waiting` | gauge | `queue` |
/// | `warren_prefetch` | gauge | |
/// | `warren_reconnects_total` | counter | |
/// | `warren_broker_connected`, `warren_broker_blocked` | gauge | |
/// | `warren_dead_lettered_total` | counter | `reason` |
/// | `warren_dead_workers_reported_total`, `warren_jobs_run_alone_total` | counter | |
/// | `warren_unique_lock_releases_total` | counter | `outcome` |
/// | `warren_job_retries_total` | counter | `type` |
/// | `warren_build_info` | gauge: 1 | `version` |
/// | `process_resident_memory_bytes` | gauge, sampled | |
///
/// The local queue gauges are sampled, not counted: ``sampleLocalQueues()`` reads every watched queue when the
/// metrics endpoint is scraped, so the job path pays nothing for them. So is the process's resident memory.
///
/// Thread safety: locked. The facade's metric objects are made once per label set and kept behind a `Mutex`; they
/// are safe from any thread themselves. The worker calls it on its broker thread, the endpoint from its own.
public final class WorkerMetrics: Sendable {
    private struct Handles {
        /// By the type a job names, known or not: one lookup per job finds its type's metrics.
        var types: [String: TypeHandles] = [:]
        var deadLetters: [String: CoreMetrics.Counter] = [:]
        var lockReleases: [String: CoreMetrics.Counter] = [:]
        var retries: [String: CoreMetrics.Counter] = [:]
        /// By broker queue and the type a job names, known or not.
        /// `nil` for a timer made while no backend was bootstrapped: it records nowhere, and is not recorded to.
        var queueLatency: [QueueAndType: CoreMetrics.Timer?] = [:]
        /// The last timer found, which most jobs use again: compared, not hashed.
        var lastQueueLatency: (key: QueueAndType, timer: CoreMetrics.Timer?)?
        var executing: [String: Gauge] = [:]
        var waiting: [String: Gauge] = [:]
        var width: [String: Gauge] = [:]
        var prefetch: Gauge?
        /// Gauges without labels, by name.
        var gauges: [String: Gauge] = [:]
        var waitingInWorker: [WorkerStatus.Job.State: Gauge] = [:]
        /// Counters without labels, by name.
        var counters: [String: CoreMetrics.Counter] = [:]
    }

    /// The metrics of one `type` label: a jobs counter per status, the run and wait timers, each made on first use.
    ///
    /// Thread safety: serially confined: kept in ``handles`` and used only while its lock is held.
    private final class TypeHandles {
        let label: String
        private var jobs: [CoreMetrics.Counter?] = Array(repeating: nil, count: JobStatus.allCases.count)
        private var runTime: CoreMetrics.Timer?
        private var wait: CoreMetrics.Timer?

        init(label: String) {
            self.label = label
        }

        /// The counter of `status`, and the timers when `timed`; `factory` is asked for only to make one.
        func metrics(
            for status: JobStatus, timed: Bool, factory: @autoclosure () -> any MetricsFactory
        ) -> (CoreMetrics.Counter, CoreMetrics.Timer?, CoreMetrics.Timer?) {
            let index = JobStatus.allCases.firstIndex(of: status)!
            let counter =
                jobs[index]
                ?? CoreMetrics.Counter(
                    label: "warren_jobs_total", dimensions: [("type", label), ("status", status.rawValue)],
                    factory: factory())
            jobs[index] = counter
            guard timed else { return (counter, nil, nil) }
            let (runTime, wait) = timers(factory: factory())
            return (counter, runTime, wait)
        }

        /// The run-time and queue-wait timers; `factory` is asked for only to make them.
        func timers(factory: @autoclosure () -> any MetricsFactory) -> (CoreMetrics.Timer, CoreMetrics.Timer) {
            let runTime =
                runTime
                ?? CoreMetrics.Timer(
                    label: "warren_job_run_seconds", dimensions: [("type", label)], factory: factory())
            let wait =
                wait
                ?? CoreMetrics.Timer(
                    label: "warren_job_wait_seconds", dimensions: [("type", label)], factory: factory())
            self.runTime = runTime
            self.wait = wait
            return (runTime, wait)
        }
    }

    /// A local queue whose gauges this process reports; weak, so that a stopped worker's queues go away.
    private struct Watched {
        weak var queue: LocalQueue?
        let name: String
        /// Where its gauges go.
        let metrics: WorkerMetrics
    }

    /// Every watched local queue in the process: metrics are process-wide, like the facade's backend.
    private static let watched = Mutex<[Watched]>([])

    /// The `type` label of results whose type this worker does not run, or that have none (bad input).
    static let otherType = "(other)"

    /// `nil`: the factory `MetricsSystem` has when each metric is first made.
    private let factory: (any MetricsFactory)?
    /// The types that get a `type` label of their own; `nil`: every type.
    private let operationTypes: Set<String>?
    private let handles = Mutex(Handles())

    /// Records through `factory`; by default through the backend the process bootstrapped, even if it does so
    /// after this initialiser ran (each metric is made when first used).
    /// - Parameter factory: Where the metrics go. `nil`: the swift-metrics backend the process bootstrapped.
    /// - Parameter operationTypes: The types the worker runs: results of other types, which a producer can make
    ///   up at will, are counted under `type="(other)"`, so that they cannot add series without bound. `nil`: no
    ///   such limit.
    public init(factory: (any MetricsFactory)? = nil, operationTypes: [String]? = nil) {
        self.factory = factory
        self.operationTypes = operationTypes.map(Set.init)
    }

    // MARK: - Jobs

    /// Counts a job that ended with a result, and records how long it ran and waited in its local queue.
    /// - Parameters:
    ///   - type: The operation type the job named; counted as ``otherType`` when the worker does not run it.
    ///   - runTime: From start to finish; `nil` when it never started.
    ///   - queueWait: From its arrival at the worker to its start; `nil` when it never started.
    func jobFinished(type: String, status: JobStatus, runTime: Duration?, queueWait: Duration?) {
        let timed = runTime != nil || queueWait != nil
        let (counter, run, wait) = handles.withLock { handles in
            typeHandles(type, in: &handles).metrics(for: status, timed: timed, factory: currentFactory)
        }
        counter.increment()
        if let runTime { run?.record(duration: runTime) }
        if let queueWait { wait?.record(duration: queueWait) }
    }

    /// Counts the job a published result ends, with its durations from the result's timings: run time
    /// `finishedAt − startedAt`, queue wait `startedAt − receivedAt` (none when it never started).
    func jobFinished(_ result: JobResult) {
        let timings = result.timings
        jobFinished(
            type: result.type ?? Self.otherType, status: result.status,
            runTime: Self.between(timings.startedAt, timings.finishedAt),
            queueWait: Self.between(timings.receivedAt, timings.startedAt))
    }

    /// From `start` to `end`, if both are known; zero when `end` comes first (clocks of two hosts).
    private static func between(_ start: Date?, _ end: Date?) -> Duration? {
        guard let start, let end else { return nil }
        // In whole nanoseconds: `.seconds(Double)` costs as much as the rest of this call. Capped at 10^9 s.
        return .nanoseconds(Int64(min(max(0, end.timeIntervalSince(start)), 1e9) * 1e9))
    }

    /// The metrics of `type`'s label: one lookup for a type this worker runs. Types it does not run share
    /// ``otherType``'s, and are not kept by name, so that made-up types cannot grow the table.
    private func typeHandles(_ type: String, in handles: inout Handles) -> TypeHandles {
        if let known = handles.types[type] { return known }
        let label = operationTypes?.contains(type) == false ? Self.otherType : type
        if let shared = handles.types[label] { return shared }
        let made = TypeHandles(label: label)
        handles.types[label] = made
        return made
    }

    /// Counts a message republished to the dead-letter exchange, by its `x-warren-dead-reason`. Past
    /// ``maxDeadLetterReasons`` reasons, new ones count as ``otherType``: a handler's code is the job's to choose,
    /// and each would be a series kept for the life of the process.
    func deadLettered(reason: String, by amount: Int64 = 1) {
        let counter: CoreMetrics.Counter = handles.withLock { handles in
            let label =
                handles.deadLetters[reason] != nil || handles.deadLetters.count < Self.maxDeadLetterReasons - 1
                ? reason : Self.otherType
            return Self.cached(label, in: &handles.deadLetters) {
                CoreMetrics.Counter(
                    label: "warren_dead_lettered_total", dimensions: [("reason", label)], factory: currentFactory)
            }
        }
        counter.increment(by: amount)
    }

    /// The most `reason` labels `warren_dead_lettered_total` has: Warren's own codes and the first handlers' codes,
    /// then `(other)`.
    static let maxDeadLetterReasons = 100

    /// Counts a job of `type` sent round for another attempt after a retryable failure, and records how long the
    /// attempt that failed ran and waited in its local queue (`timings`), as ``jobFinished(_:)`` does for the last.
    func retried(type: String, timings: JobTimings) {
        let (counter, (run, wait)) = handles.withLock { handles in
            let counter = Self.cached(type, in: &handles.retries) {
                CoreMetrics.Counter(
                    label: "warren_job_retries_total", dimensions: [("type", type)], factory: currentFactory)
            }
            return (counter, typeHandles(type, in: &handles).timers(factory: currentFactory))
        }
        if let runTime = Self.between(timings.startedAt, timings.finishedAt) { run.record(duration: runTime) }
        if let queueWait = Self.between(timings.receivedAt, timings.startedAt) { wait.record(duration: queueWait) }
        counter.increment()
    }

    /// Counts what releasing a unique job's lock found: `released`, `expired`, `takenByAnother` (expired, and
    /// another job holds it now), `unreachable` (on a cluster node that is down) or `refused`.
    func uniqueLockReleased(_ outcome: String, by amount: Int64 = 1) {
        let counter: CoreMetrics.Counter = handles.withLock { handles in
            Self.cached(outcome, in: &handles.lockReleases) {
                CoreMetrics.Counter(
                    label: "warren_unique_lock_releases_total", dimensions: [("outcome", outcome)],
                    factory: currentFactory)
            }
        }
        counter.increment(by: amount)
    }

    // MARK: - Queue latency

    /// Wraps `started`, which a job's operation calls on its thread as the job's code starts: the wrapper first
    /// records the job's queue latency under its broker `queue` and type, from when it was due (``due(of:_:)``) to
    /// now. Returns `started` itself when no due time is known, or no metrics backend records it.
    func recordingQueueLatency(
        of descriptor: OperationDescriptor, _ delivery: Delivery, from queue: String,
        then started: (@Sendable () -> Void)?
    ) -> (@Sendable () -> Void)? {
        guard let due = Self.due(of: descriptor, delivery),
            let timer = queueLatencyTimer(queue: queue, type: descriptor.type)
        else { return started }
        return {
            timer.record(duration: Self.between(due, Date()) ?? .zero)
            started?()
        }
    }

    /// Records a queue latency of `latency` under `queue` and `type`.
    func queueLatency(queue: String, type: String, _ latency: Duration) {
        queueLatencyTimer(queue: queue, type: type)?.record(duration: latency)
    }

    /// When a job was due to start: the latest of its creation (`createdAt`), its `notBefore` or a retry's, and
    /// its last `warren dead requeue`; `nil` when none is known. A scheduled or retried job does not count the time
    /// it was meant to wait.
    static func due(of descriptor: OperationDescriptor, _ delivery: Delivery) -> Date? {
        func later(_ one: Date?, _ other: Date?) -> Date? {
            guard let one else { return other }
            guard let other else { return one }
            return max(one, other)
        }
        // No header, no lookup: most jobs were neither retried nor requeued.
        guard delivery.properties.headers?.isEmpty == false else {
            return later(descriptor.createdAt, descriptor.notBefore)
        }
        return later(later(descriptor.createdAt, delivery.notBefore(of: descriptor)), delivery.requeuedAt)
    }

    /// A broker queue and the type a job names: one lookup per job finds its queue latency's timer.
    private struct QueueAndType: Hashable {
        let queue: String
        let type: String
    }

    /// The timer of `queue` and `type`; `nil` when it was made while no backend was bootstrapped (a metric keeps the
    /// backend it was made with).
    private func queueLatencyTimer(queue: String, type: String) -> CoreMetrics.Timer? {
        handles.withLock { handles in
            let key = QueueAndType(queue: queue, type: type)
            if let last = handles.lastQueueLatency, last.key == key { return last.timer }
            if let timer = handles.queueLatency[key] {
                handles.lastQueueLatency = (key, timer)
                return timer
            }
            // A type this worker does not run shares the label of the others, and is not kept by its own name.
            let label = typeHandles(type, in: &handles).label
            let labelled = QueueAndType(queue: queue, type: label)
            if let timer = handles.queueLatency[labelled] { return timer }
            let factory = currentFactory
            let timer =
                factory is NOOPMetricsHandler
                ? nil
                : CoreMetrics.Timer(
                    label: "warren_job_queue_latency_seconds", dimensions: [("queue", queue), ("type", label)],
                    factory: factory)
            handles.queueLatency[labelled] = timer
            return timer
        }
    }

    // MARK: - Connection

    /// Makes the counters without labels, at 0, so that their first increment shows as one (Prometheus' `rate` and
    /// `increase` do not see a series' first value): a worker that reports a death once, just after it started, is
    /// the case that matters.
    func startCounters() {
        for label in ["warren_reconnects_total", "warren_dead_workers_reported_total", "warren_jobs_run_alone_total"] {
            increment(label, by: 0)
        }
        // The labels Warren itself gives, so that an alert on them sees 0 rather than no data (a handler's own
        // codes appear when first used).
        for reason in [
            "malformedMessage", "oversized", "invalidDescriptor", "unsupportedVersion", "unsupportedContentType",
            "unknownType", "duplicateID", "dependencyCycle", "timeLimit", "crashedWorker", "resultRefused",
            "resultTooLarge", "rejected", "invalidInput", "handlerError",
        ] {
            deadLettered(reason: reason, by: 0)
        }
        for outcome in ["released", "expired", "takenByAnother", "unreachable", "refused"] {
            uniqueLockReleased(outcome, by: 0)
        }
        Gauge(label: "warren_build_info", dimensions: [("version", WarrenVersion.string)], factory: currentFactory)
            .record(1)
    }

    /// Counts a reconnection after a lost connection.
    func reconnected() {
        increment("warren_reconnects_total")
    }

    /// Reports whether the worker has its broker, and whether the broker blocks the connection (a memory or disk
    /// alarm).
    func brokerConnection(connected: Bool, blocked: Bool) {
        let gauges = handles.withLock { handles in
            ["warren_broker_connected", "warren_broker_blocked"].map { label in
                Self.cached(label, in: &handles.gauges) { Gauge(label: label, factory: currentFactory) }
            }
        }
        gauges[0].record(connected ? 1 : 0)
        gauges[1].record(blocked ? 1 : 0)
    }

    // MARK: - Dead workers

    /// Counts the journal of a dead worker this worker reported: jobs were executing when it died.
    func deadWorkerReported() {
        increment("warren_dead_workers_reported_total")
    }

    /// Counts a job this worker ran alone, because it was executing when a worker died.
    func jobRanAlone() {
        increment("warren_jobs_run_alone_total")
    }

    private func increment(_ label: String, by amount: Int = 1) {
        let counter: CoreMetrics.Counter = handles.withLock { handles in
            Self.cached(label, in: &handles.counters) { CoreMetrics.Counter(label: label, factory: currentFactory) }
        }
        counter.increment(by: amount)
    }

    /// Reports how many jobs the worker holds outside its local queues, by what they wait for: their dependencies
    /// (`waitingForDependencies`), their turn under a rate limit (`waitingForTurn`), the worker to be idle
    /// (`waitingToRunAlone`).
    func jobsWaitingInWorker(_ counts: [WorkerStatus.Job.State: Int]) {
        let gauges = handles.withLock { handles in
            counts.map { state, count in
                let gauge = Self.cached(state, in: &handles.waitingInWorker) {
                    Gauge(
                        label: "warren_jobs_waiting_in_worker", dimensions: [("state", state.rawValue)],
                        factory: currentFactory)
                }
                return (gauge, count)
            }
        }
        for (gauge, count) in gauges { gauge.record(count) }
    }

    /// Reports the prefetch in force.
    func prefetch(_ count: Int) {
        let gauge: Gauge = handles.withLock { handles in
            if let gauge = handles.prefetch { return gauge }
            let gauge = Gauge(label: "warren_prefetch", factory: currentFactory)
            handles.prefetch = gauge
            return gauge
        }
        gauge.record(count)
    }

    // MARK: - Local queues

    /// Sets the gauges of local queue `name`.
    func localQueue(_ name: String, executing: Int, waiting: Int, width: Int) {
        let gauges: (executing: Gauge, waiting: Gauge, width: Gauge) = handles.withLock { handles in
            let executing = Self.cached(name, in: &handles.executing) {
                Gauge(label: "warren_local_queue_executing", dimensions: [("queue", name)], factory: currentFactory)
            }
            let waiting = Self.cached(name, in: &handles.waiting) {
                Gauge(label: "warren_local_queue_waiting", dimensions: [("queue", name)], factory: currentFactory)
            }
            let width = Self.cached(name, in: &handles.width) {
                Gauge(label: "warren_local_queue_width", dimensions: [("queue", name)], factory: currentFactory)
            }
            return (executing, waiting, width)
        }
        gauges.executing.record(executing)
        gauges.waiting.record(waiting)
        gauges.width.record(width)
    }

    /// Reports these local queues' gauges from now on, at each ``sampleLocalQueues()``, for as long as they live.
    func watch(_ queues: some Sequence<LocalQueue>) {
        let added = queues.map { Watched(queue: $0, name: $0.name, metrics: self) }
        Self.watched.withLock { $0 += added }
        Self.sample(added)
    }

    /// Reads the executing and waiting operations and the width of every watched local queue in the process into
    /// its gauges, adding up queues of the same name (several workers in one process); the gauges of a queue whose
    /// worker is gone read 0, and it is forgotten. The metrics endpoint calls it before each scrape. Safe from any
    /// thread.
    public static func sampleLocalQueues() {
        let entries = watched.withLock { watched in
            defer { watched.removeAll { $0.queue == nil } }
            return watched
        }
        sample(entries)
    }

    /// Reads the process's resident memory into `process_resident_memory_bytes`, on the process's backend: the
    /// metrics endpoint calls it before each scrape. Safe from any thread.
    public static func sampleProcess() {
        guard let bytes = ResidentMemory.bytes() else { return }
        Gauge(label: "process_resident_memory_bytes").record(bytes)
    }

    private static func sample(_ entries: [Watched]) {
        // Instances on the process's backend share its series: their queues add up. One given a factory of its
        // own (a test's) reports alone.
        let byBackend = Dictionary(grouping: entries) { $0.metrics.factory == nil ? nil : ObjectIdentifier($0.metrics) }
        for entries in byBackend.values {
            var counts: [String: (executing: Int, waiting: Int, width: Int)] = [:]
            for entry in entries {
                let (executing, waiting) = entry.queue?.executingAndWaiting ?? (0, 0)
                counts[entry.name, default: (0, 0, 0)].executing += executing
                counts[entry.name, default: (0, 0, 0)].waiting += waiting
                counts[entry.name, default: (0, 0, 0)].width += entry.queue?.width ?? 0
            }
            for (name, count) in counts {
                entries[0].metrics.localQueue(
                    name, executing: count.executing, waiting: count.waiting, width: count.width)
            }
        }
    }

    /// The factory in force: the one given, or the process's backend.
    private var currentFactory: any MetricsFactory {
        factory ?? MetricsSystem.factory
    }

    /// The metric `cache` holds for `key`, made and kept on first use.
    private static func cached<Key: Hashable, Metric>(
        _ key: Key, in cache: inout [Key: Metric], make: () -> Metric
    ) -> Metric {
        if let metric = cache[key] { return metric }
        let metric = make()
        cache[key] = metric
        return metric
    }
}
