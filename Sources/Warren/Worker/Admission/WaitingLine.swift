/// Jobs that wait in the worker for their turn under a rate limit (``Throttle``, ``FleetThrottle``): highest priority
/// first, then in the order they came. A job that ends while it waits (it can only be cancelled) is dropped when it
/// comes up.
///
/// Thread safety: confined to the worker's broker thread.
struct WaitingLine {
    /// The waiting jobs by priority, lowest first, each in arrival order from its `start`.
    private var levels = Array(repeating: Level(), count: JobPriority.allCases.count)

    private struct Level {
        var jobs: [InFlightJob] = []
        var start = 0
        var isEmpty: Bool { start == jobs.count }
    }

    var isEmpty: Bool { levels.allSatisfy(\.isEmpty) }

    mutating func append(_ job: InFlightJob) {
        levels[Self.level(of: job)].jobs.append(job)
    }

    /// Puts `job`, taken out a moment ago, back at the head of its priority.
    mutating func putBack(_ job: InFlightJob) {
        let level = Self.level(of: job)
        if levels[level].start > 0 {
            levels[level].start -= 1
            levels[level].jobs[levels[level].start] = job
        } else {
            levels[level].jobs.insert(job, at: 0)
        }
    }

    /// The job that comes up next, after dropping the cancelled ones ahead of it.
    mutating func next() -> InFlightJob? {
        for level in levels.indices.reversed() {
            while !levels[level].isEmpty {
                let job = levels[level].jobs[levels[level].start]
                guard job.operation.job.isCancelled else { return job }
                removeFirst(at: level)
            }
        }
        return nil
    }

    /// Takes out the job ``next()`` returned.
    mutating func removeNext() {
        guard let job = next() else { return }
        removeFirst(at: Self.level(of: job))
    }

    private static func level(of job: InFlightJob) -> Int {
        Int(job.descriptor.priority.amqpPriority) - 1
    }

    private mutating func removeFirst(at level: Int) {
        levels[level].start += 1
        if levels[level].isEmpty {
            levels[level] = Level()
        } else if levels[level].start >= 1024, levels[level].start * 2 >= levels[level].jobs.count {
            levels[level].jobs.removeFirst(levels[level].start)
            levels[level].start = 0
        }
    }
}
