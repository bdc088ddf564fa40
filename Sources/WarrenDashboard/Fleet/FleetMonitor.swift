import Foundation
import Synchronization
import Warren

/// Polls the broker on a thread of its own, as `warren status --jobs` and `warren dead list` do, and keeps the latest
/// ``FleetSnapshot``: pages never wait for the broker. A poll that fails keeps the last snapshot and says why; the
/// next one connects anew.
///
/// Thread safety: locked. The producer and the dead-letter reader are confined to the monitor's thread; snapshots
/// are shared under a `Mutex`.
final class FleetMonitor: Sendable {
    /// How the monitor polls. Thread safety: immutable (a value).
    struct Options: Sendable {
        /// Seconds between polls. Default: 2.
        var interval = 2.0
        /// How long workers have to answer a status request. Default: 1 s.
        var statusWait = Duration.seconds(1)
        /// How many jobs each worker lists. Default: 100.
        var jobsPerWorker = 100
        /// How many dead letters the Dead letters page lists. Default: 500.
        var deadLettersListed = 500
        /// Job queues to show even when no live worker consumes them.
        var queues: [String] = []
    }

    /// The dead letters as last listed. Thread safety: a value, copied out under the monitor's lock.
    struct DeadListing: Sendable {
        var letters: [DeadLetter] = []
        var total = 0
        var takenAt: Date?
        var problem: String?
    }

    private let url: String
    private let options: Options
    private let snapshot = Mutex(FleetSnapshot())
    private let deadListing = Mutex(DeadListing())
    /// When a page last asked for the dead letters: they are listed only while someone looks.
    private let deadWanted = Mutex(Date.distantPast)
    /// The leading scheduler's announcement, and when the Schedules page last asked for it.
    private let leader = Mutex(LeaderReading())
    private let stopped = Atomic(false)
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Called with each new snapshot (to attribute results to queues).
    private let observer: @Sendable (FleetSnapshot) -> Void

    init(url: String, options: Options, observer: @escaping @Sendable (FleetSnapshot) -> Void) {
        self.url = url
        self.options = options
        self.observer = observer
    }

    /// Starts the monitor's thread.
    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "warren dashboard monitor"
        thread.start()
    }

    /// Ends the monitor's thread once its poll under way ends.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        wake.signal()
        finished.wait()
    }

    /// Polls again now rather than at the next interval (after an action, to show its effect soon).
    func refresh() {
        wake.signal()
    }

    /// The latest snapshot.
    var current: FleetSnapshot {
        snapshot.withLock { $0 }
    }

    /// The dead letters as last listed; asks for a listing at the next poll if the last is older than a poll.
    func deadLetters() -> DeadListing {
        deadWanted.withLock { $0 = Date() }
        let listing = deadListing.withLock { $0 }
        if listing.takenAt.map({ Date().timeIntervalSince($0) > options.interval }) ?? true { wake.signal() }
        return listing
    }

    /// How long a worker that stopped answering stays on the Overview, marked as such: 5 minutes.
    static let goneKept = 300.0

    /// The leading scheduler as last read. Thread safety: a value, copied out under the monitor's lock.
    struct LeaderReading: Sendable {
        var leader: SchedulerLeader?
        var takenAt: Date?
        var problem: String?
        var wanted = Date.distantPast
    }

    /// The leading scheduler as last read; asks for a reading at the next poll if the last is older than a poll.
    func schedulerLeader() -> LeaderReading {
        let reading = leader.withLock { reading in
            reading.wanted = Date()
            return reading
        }
        if reading.takenAt.map({ Date().timeIntervalSince($0) > options.interval }) ?? true { wake.signal() }
        return reading
    }

    private func readLeader() {
        do {
            let current = try SchedulerLeader.current(url: url)
            leader.withLock { $0 = LeaderReading(leader: current, takenAt: Date(), wanted: $0.wanted) }
        } catch {
            leader.withLock { $0.problem = Self.describe(error) }
        }
    }

    private func run() {
        var producer: Producer?
        /// Every worker seen in the last ``goneKept`` seconds, by id, host and process, with when.
        var seen: [String: (worker: WorkerStatus, lastSeen: Date)] = [:]
        while !stopped.load(ordering: .relaxed) {
            do {
                let connected = try producer ?? Producer(url: url)
                producer = connected
                var taken = try poll(connected)
                let now = Date()
                var answered: Set<String> = []
                for worker in taken.workers {
                    let key = "\(worker.workerID)\u{0}\(worker.host)\u{0}\(worker.pid)"
                    answered.insert(key)
                    seen[key] = (worker, now)
                }
                seen = seen.filter { now.timeIntervalSince($0.value.lastSeen) < Self.goneKept }
                taken.gone = seen.filter { !answered.contains($0.key) }.values.sorted { $0.lastSeen > $1.lastSeen }
                snapshot.withLock { $0 = taken }
                observer(taken)
            } catch {
                producer?.close()
                producer = nil
                let now = Date()
                snapshot.withLock { snapshot in
                    snapshot.problemSince = snapshot.problem == nil ? now : snapshot.problemSince
                    snapshot.problem = Self.describe(error)
                }
            }
            if Date().timeIntervalSince(deadWanted.withLock { $0 }) < 60 { listDeadLetters() }
            if Date().timeIntervalSince(leader.withLock { $0.wanted }) < 60 { readLeader() }
            _ = wake.wait(timeout: .now() + options.interval)
        }
        producer?.close()
    }

    private func poll(_ producer: Producer) throws -> FleetSnapshot {
        var taken = FleetSnapshot()
        taken.workers = try producer.workerStatuses(timeout: options.statusWait, jobs: options.jobsPerWorker)
        // Names a reply lists are another process's word: one no queue can have is not looked up, which the
        // broker would answer by closing the connection.
        let consumed = taken.workers.flatMap(\.queues).filter { Topology.problem(withJobQueue: $0) == nil }
        for name in Set(consumed + options.queues + [Topology.defaultQueue]).sorted() {
            do {
                taken.queues.append(.init(name: name, status: try producer.jobQueueStatus(name)))
            } catch let error as WarrenError where error.code == .queueUnreachable {
                taken.queues.append(.init(name: name, unreachable: error.message))
            }
        }
        taken.deadLetters = try? producer.deadLetterCount()
        taken.schedulers = try? producer.jobQueueStatus(Topology.scheduleQueue)?.consumers
        taken.listedJobs = taken.sortedJobs()
        taken.takenAt = Date()
        return taken
    }

    private func listDeadLetters() {
        do {
            let queue = try DeadLetterQueue(url: url)
            defer { queue.close() }
            let (letters, total) = try queue.listing(limit: options.deadLettersListed)
            deadListing.withLock { $0 = DeadListing(letters: letters, total: total, takenAt: Date()) }
        } catch {
            deadListing.withLock { $0.problem = Self.describe(error) }
        }
    }

    /// What a page shows of `error`: its message, never a URL with its password (Warren's errors redact them).
    static func describe(_ error: any Error) -> String {
        (error as? WarrenError)?.message ?? "\(error)"
    }
}
