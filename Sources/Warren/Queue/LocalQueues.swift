/// A worker's local operation queues, by name, and the operations a turn of the broker thread hands them.
///
/// Operations admitted during a turn go to their queues together when it ends (``handOver()``): one call per queue,
/// so that Foundation takes its lock and schedules once for all of them, and a queue starts them in priority order.
/// Thread safety: confined to the worker's broker thread; each ``LocalQueue`` is thread safe.
final class LocalQueues {
    /// The queues by name.
    let byName: [String: LocalQueue]
    /// Operations to add at the end of this turn, by queue name.
    private var pending: [String: [JobOperation]] = [:]

    init(widths: [String: Int]) {
        byName = widths.reduce(into: [:]) { queues, entry in
            queues[entry.key] = LocalQueue(name: entry.key, width: entry.value)
        }
    }

    subscript(name: String) -> LocalQueue? { byName[name] }

    /// The sum of the queues' widths.
    var totalWidth: Int { byName.values.reduce(0) { $0 + $1.width } }

    /// Queues `job`'s operation with the others of this turn; one that runs alone goes to its queue now.
    func add(_ job: InFlightJob) {
        job.isQueued = true
        if job.runsAlone {
            byName[job.localQueue]!.add(job.operation)
        } else {
            pending[job.localQueue, default: []].append(job.operation)
        }
    }

    /// Hands the operations of this turn to their queues.
    func handOver() {
        for (name, operations) in pending where !operations.isEmpty { byName[name]!.add(operations) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Whether none of `jobs` is in a local queue but those held back this turn.
    func isIdle(jobs: some Sequence<InFlightJob>) -> Bool {
        let heldBack = Set(pending.values.joined().map(ObjectIdentifier.init))
        return !jobs.contains { $0.isQueued && !heldBack.contains(ObjectIdentifier($0.operation)) }
    }
}
