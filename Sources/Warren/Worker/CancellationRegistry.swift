import Foundation

/// The tombstones a worker keeps: jobs cancelled by id, and keys whose older sequences were superseded.
///
/// A job still in the broker cannot be removed from its queue, so each worker remembers cancellations and checks
/// every delivery against them. Bounded: the oldest tombstones are forgotten past ``capacity``.
///
/// Thread safety: confined to the worker's broker thread.
struct CancellationRegistry {
    /// How many job ids and how many keys are remembered. Default: 100,000 each.
    let capacity: Int
    private var cancelledJobs: [String: Cancellation] = [:]
    private var jobOrder: [String] = []
    private var supersededKeys: [String: (before: UInt64, cancellation: Cancellation)] = [:]
    private var keyOrder: [String] = []

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    mutating func record(_ message: ControlMessage) {
        for id in message.jobIDs where cancelledJobs[id] == nil {
            cancelledJobs[id] = message.cancellation
            jobOrder.append(id)
        }
        if let key = message.key, let before = message.beforeSequence {
            if supersededKeys[key] == nil { keyOrder.append(key) }
            if before > supersededKeys[key]?.before ?? 0 {
                supersededKeys[key] = (before, message.cancellation)
            }
        }
        evict()
    }

    /// Why `descriptor` is cancelled, or `nil` when it may run.
    func cancellation(of descriptor: OperationDescriptor) -> Cancellation? {
        if let cancellation = cancelledJobs[descriptor.id] { return cancellation }
        if let key = descriptor.key, let superseded = supersededKeys[key], descriptor.sequence < superseded.before {
            return superseded.cancellation
        }
        return nil
    }

    private mutating func evict() {
        if jobOrder.count > capacity {
            let excess = jobOrder.count - capacity
            for id in jobOrder.prefix(excess) { cancelledJobs[id] = nil }
            jobOrder.removeFirst(excess)
        }
        if keyOrder.count > capacity {
            let excess = keyOrder.count - capacity
            for key in keyOrder.prefix(excess) { supersededKeys[key] = nil }
            keyOrder.removeFirst(excess)
        }
    }
}
