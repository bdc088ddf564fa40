import Foundation
import Synchronization
import Warren

/// Reads the `warren.results` stream and live progress reports on a thread of its own, and keeps what pages show:
/// the latest results, each judged current or stale as `warren results` judges it, the latest progress of running
/// jobs, and the throughput of the last minutes. Reconnects, from where it stopped, when the broker goes away.
///
/// Thread safety: locked. The reader is confined to the feed's thread; what it learnt is shared under a `Mutex`.
final class ResultFeed: Sendable {
    /// A result as the feed read it. Thread safety: immutable (a value).
    struct Entry: Sendable {
        var result: JobResult
        /// `nil` for a current result; the newer sequence of its key for a stale one.
        var staleBehind: UInt64?
        /// The job queue it is counted under, when known.
        var queue: String?
    }

    /// What pages read. Thread safety: a value, copied out under the feed's lock.
    struct State: Sendable {
        /// Newest last, at most ``ResultFeed/kept``.
        var entries: [Entry] = []
        /// Latest progress report by job id, for jobs without a result yet.
        var progress: [String: ProgressMessage] = [:]
        var throughput = ThroughputHistory()
        /// Why the feed is not reading, or `nil`.
        var problem: String?
        /// Results read since the feed started.
        var read = 0
        /// Results ignored as duplicates (read again after a redelivery or a reconnection).
        var duplicates = 0
    }

    /// The most results kept for the Results page.
    static let kept = 10_000
    /// The most progress reports kept.
    static let progressKept = 20_000

    private let url: String
    private let since: Date
    private let state = Mutex(State())
    /// Which job queue a job came from, as far as the fleet's status replies tell: jobs they listed, and the one
    /// queue of a worker that consumes only one.
    private let attribution = Mutex(Attribution())
    private let stopped = Atomic(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Job queues by job id and by worker id. Thread safety: a value, kept under its own lock.
    struct Attribution: Sendable {
        var jobQueues: [String: String] = [:]
        var workerQueues: [String: String] = [:]
    }

    /// - Parameters:
    ///   - url: The broker URL.
    ///   - since: Read results stored since this instant.
    init(url: String, since: Date) {
        self.url = url
        self.since = since
    }

    /// Starts the feed's thread.
    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "warren dashboard results"
        thread.start()
    }

    /// Ends the feed's thread, within about half a second.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
    }

    /// What the feed knows now.
    var current: State {
        state.withLock { $0 }
    }

    /// Learns from a poll of the fleet where jobs come from.
    func learn(from snapshot: FleetSnapshot) {
        attribution.withLock { attribution in
            for worker in snapshot.workers {
                if worker.queues.count == 1 { attribution.workerQueues[worker.workerID] = worker.queues[0] }
                for job in worker.jobs ?? [] { attribution.jobQueues[job.id] = job.queue }
            }
            if attribution.jobQueues.count > 200_000 { attribution.jobQueues.removeAll(keepingCapacity: true) }
        }
    }

    private func run() {
        var reader: ResultReader?
        var filter = StaleResultFilter()
        var lastOffset: UInt64?
        var backoff = 0.25
        while !stopped.load(ordering: .relaxed) {
            do {
                if reader == nil {
                    let start: ResultReader.Start = lastOffset.map { .offset($0) } ?? .since(since)
                    reader = try ResultReader(url: url, from: start, progress: true)
                    state.withLock { $0.problem = nil }
                    backoff = 0.25
                }
                guard let event = try reader?.next(waitingUpTo: .milliseconds(500)) else {
                    state.withLock { $0.throughput.trim() }
                    continue
                }
                switch event {
                case .progress(let report):
                    state.withLock { state in
                        if state.progress.count >= Self.progressKept { state.progress.removeAll(keepingCapacity: true) }
                        state.progress[report.jobID] = report
                    }
                case .result(.success(let result), let offset):
                    lastOffset = offset ?? lastOffset
                    take(result, judged: filter.judge(result))
                case .result(.failure, let offset):
                    lastOffset = offset ?? lastOffset
                }
            } catch {
                reader?.close()
                reader = nil
                state.withLock { $0.problem = "\(error)" }
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 5)
            }
        }
        reader?.close()
    }

    private func take(_ result: JobResult, judged verdict: StaleResultFilter.Verdict) {
        let queue = attribution.withLock { $0.jobQueues[result.jobID] ?? $0.workerQueues[result.workerID] }
        state.withLock { state in
            state.progress[result.jobID] = nil
            switch verdict {
            case .duplicate:
                state.duplicates += 1
                return
            case .current:
                state.entries.append(Entry(result: result, staleBehind: nil, queue: queue))
            case .stale(let newer):
                state.entries.append(Entry(result: result, staleBehind: newer, queue: queue))
            }
            state.read += 1
            state.throughput.record(result, queue: queue)
            if state.entries.count > Self.kept + Self.kept / 10 {
                state.entries.removeFirst(state.entries.count - Self.kept)
            }
        }
    }
}
