import Dispatch
import Foundation
import Warren

/// What the dashboard's buttons do: the control messages `warren cancel`, `pause`, `resume` and `resize` send, and
/// `warren dead requeue`, plus removing dead letters. Each returns a sentence for the page to show.
///
/// Thread safety: immutable; the ``SharedProducer`` confines its producer to its own thread, and dead-letter calls
/// run one at a time on a serial queue, each on a connection of its own.
final class FleetActions: Sendable {
    private let url: String
    private let producer: SharedProducer
    private let sequences: SequenceStore
    private let deadLetters = DispatchQueue(label: "warren dashboard dead letters")

    init(url: String, sequences: SequenceStore = SequenceStore()) throws {
        self.url = url
        self.sequences = sequences
        producer = try SharedProducer(url: url, sequences: sequences)
    }

    /// Closes the producer.
    func close() {
        producer.close()
    }

    /// Cancels one job wherever it is.
    func cancel(jobID: String) async throws -> String {
        try await producer.cancel(jobIDs: [jobID])
        return "Asked the fleet to cancel job \(jobID)."
    }

    /// Cancels every job of `key` enqueued before now, as a newer job of the key would.
    func cancel(key: String) async throws -> String {
        let before = try sequences.next()
        try await producer.supersede(key: key, before: before)
        return "Asked the fleet to cancel every job of key \(key) enqueued so far."
    }

    /// Cancels every job of `queue` enqueued before now: in the broker, waiting and executing.
    func cancelAll(queue: String) async throws -> String {
        try await producer.withProducer { try $0.cancelAll(queue: queue) }
        return "Asked the fleet to cancel every job of queue \(queue) enqueued so far."
    }

    /// Pauses taking jobs on `worker` (or all) from `queue` (or all).
    func pause(worker: String?, queue: String?) async throws -> String {
        try await producer.withProducer { try $0.pause(worker: worker, queue: queue) }
        return "Paused \(Self.scope(worker: worker, queue: queue))."
    }

    /// Resumes what ``pause(worker:queue:)`` paused.
    func resume(worker: String?, queue: String?) async throws -> String {
        try await producer.withProducer { try $0.resume(worker: worker, queue: queue) }
        return "Resumed \(Self.scope(worker: worker, queue: queue))."
    }

    /// Sets the width of a local queue on `worker` (or every worker that has it).
    func resize(localQueue: String, width: Int, worker: String?) async throws -> String {
        try await producer.withProducer { try $0.resize(localQueue: localQueue, width: width, worker: worker) }
        let on = worker.map { " on worker \($0)" } ?? " on every worker that has it"
        return "Set the width of local queue \(localQueue) to \(width)\(on)."
    }

    /// Sends the dead letters of `jobIDs` back to their queues.
    func requeue(deadJobIDs jobIDs: Set<String>) async throws -> String {
        let report = try await onDeadLetters { try $0.requeue(jobIDs: jobIDs) }
        var parts = ["Requeued \(report.requeued.count) dead letter\(report.requeued.count == 1 ? "" : "s")."]
        if !report.stayed.isEmpty { parts.append("\(report.stayed.count) stay dead: their queue is gone.") }
        if !report.refused.isEmpty { parts.append("The broker refused \(report.refused.count) (queue full).") }
        let missing = jobIDs.subtracting(report.requeued.compactMap(\.jobID) + report.stayed.compactMap(\.jobID))
            .subtracting(report.refused.compactMap(\.jobID))
        if !missing.isEmpty { parts.append("\(missing.count) not found: requeued or removed already.") }
        return parts.joined(separator: " ")
    }

    /// Removes the dead letters of `jobIDs` for good.
    func delete(deadJobIDs jobIDs: Set<String>) async throws -> String {
        let removed = try await onDeadLetters { try $0.delete(jobIDs: jobIDs) }
        let missing = jobIDs.count - Set(removed.compactMap(\.jobID)).count
        return "Removed \(removed.count) dead letter\(removed.count == 1 ? "" : "s")."
            + (missing > 0 ? " \(missing) not found: requeued or removed already." : "")
    }

    private func onDeadLetters<T: Sendable>(_ body: @escaping @Sendable (DeadLetterQueue) throws -> T) async throws -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            deadLetters.async { [url] in
                continuation.resume(
                    with: Result {
                        let queue = try DeadLetterQueue(url: url)
                        defer { queue.close() }
                        return try body(queue)
                    })
            }
        }
    }

    private static func scope(worker: String?, queue: String?) -> String {
        let on = worker.map { "worker \($0)" } ?? "every worker"
        return queue.map { "queue \($0) on \(on)" } ?? "every queue on \(on)"
    }
}
