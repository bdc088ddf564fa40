import Foundation
import Synchronization

/// One of a worker's local operation queues: a Foundation `OperationQueue` with a width and a name.
///
/// A worker has one per kind of resource ("one queue per disk"): a CPU queue as wide as the cores, an I/O queue
/// much wider. Ready operations start in priority order.
///
/// Thread safety: locked. The name is immutable, the width atomic (changed on the broker thread, read by metrics
/// and status); Foundation's `OperationQueue` is thread safe.
public final class LocalQueue: @unchecked Sendable {
    /// The name operation types are registered on.
    public let name: String
    private let currentWidth: Atomic<Int>
    private let queue = OperationQueue()

    init(name: String, width: Int) {
        self.name = name
        currentWidth = Atomic(width)
        queue.name = "warren.\(name)"
        queue.maxConcurrentOperationCount = width
    }

    /// The widths a local queue may be resized to (`resize(to:)`).
    public static let widths = 1...10_000

    /// The most operations that execute at once (`maxConcurrentOperationCount`).
    public var width: Int { currentWidth.load(ordering: .relaxed) }

    /// Changes the width live, as setting an `OperationQueue`'s `maxConcurrentOperationCount` does: wider, waiting
    /// operations start at once; narrower, executing ones go on and the next start once fewer than `width` execute.
    func resize(to width: Int) {
        currentWidth.store(width, ordering: .relaxed)
        queue.maxConcurrentOperationCount = width
    }

    func add(_ operation: JobOperation) {
        add([operation])
    }

    /// Adds operations in one call: Foundation then takes its lock and schedules once for all of them.
    func add(_ operations: [JobOperation]) {
        queue.addOperations(operations, waitUntilFinished: false)
    }

    /// Operations added and not finished: waiting and executing.
    public var operationCount: Int {
        queue.operationCount
    }

    /// Operations executing now, and operations added that have not started: a snapshot, for metrics. Safe from
    /// any thread; costs a copy of the queue's operation list, so it is read when metrics are scraped, not per job.
    var executingAndWaiting: (executing: Int, waiting: Int) {
        var executing = 0
        var waiting = 0
        for operation in queue.operations where !operation.isFinished {
            if operation.isExecuting { executing += 1 } else { waiting += 1 }
        }
        return (executing, waiting)
    }

    /// Whether new operations are held back (executing ones go on).
    public var isSuspended: Bool {
        get { queue.isSuspended }
        set { queue.isSuspended = newValue }
    }
}
