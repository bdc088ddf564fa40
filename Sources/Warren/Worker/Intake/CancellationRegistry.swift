import Foundation

/// The tombstones a worker keeps: jobs cancelled by id, keys whose older sequences were superseded, and queues
/// (or all of them) whose jobs below a sequence were cancelled by `cancel --all`.
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
    /// `cancel --all`: by broker queue, `""` standing for every queue.
    private var cancelledBefore: [String: (before: UInt64, cancellation: Cancellation)] = [:]

    init(capacity: Int = ControlMessage.cancellationsRemembered) {
        self.capacity = capacity
    }

    mutating func record(_ message: ControlMessage) {
        switch message.kind {
        case "cancelAll":
            guard let before = message.beforeSequence else { return }
            let scope = message.queue ?? ""
            if before > cancelledBefore[scope]?.before ?? 0 {
                cancelledBefore[scope] = (before, message.cancellation)
            }
        default:
            for id in message.jobIDs where cancelledJobs[id] == nil {
                cancelledJobs[id] = message.cancellation
                jobOrder.append(id)
            }
            if let key = message.key, let before = message.beforeSequence, before > supersededKeys[key]?.before ?? 0 {
                if supersededKeys[key] == nil { keyOrder.append(key) }
                supersededKeys[key] = (before, message.cancellation)
            }
        }
        evict()
    }

    /// Why `descriptor`, delivered from broker queue `queue`, is cancelled, or `nil` when it may run.
    func cancellation(of descriptor: OperationDescriptor, queue: String) -> Cancellation? {
        // Each table is asked only when it holds something: a lookup hashes the id even in an empty one.
        if !cancelledJobs.isEmpty, let cancellation = cancelledJobs[descriptor.id] { return cancellation }
        if !supersededKeys.isEmpty, let key = descriptor.key, let superseded = supersededKeys[key],
            descriptor.sequence < superseded.before
        {
            return superseded.cancellation
        }
        guard !cancelledBefore.isEmpty else { return nil }
        for scope in [queue, ""] {
            if let all = cancelledBefore[scope], descriptor.sequence < all.before { return all.cancellation }
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
