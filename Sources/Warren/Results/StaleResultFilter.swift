import Foundation

/// Keeps only the newest result per key, as ListAdder keeps only the newest sum: a result whose sequence is lower
/// than one already seen for its key is stale.
///
/// Results without a key are never stale. Duplicates of a job already seen (the same job id, delivered again after
/// a redelivery) are reported as such; the result of a run after `warren dead requeue` sent the job round again
/// (``JobResult/requeuedAt``) is not a duplicate, but the job's current result.
///
/// Thread safety: a value type; confine each instance to one thread.
public struct StaleResultFilter: Sendable {
    /// What to make of an arriving result.
    public enum Verdict: Sendable, Equatable {
        /// The newest for its key so far (or it has no key).
        case current
        /// Older than the result of sequence `newer` already seen for the same key.
        case stale(newer: UInt64)
        /// A result for a job already seen.
        case duplicate
    }

    private var newestByKey: [String: UInt64] = [:]
    /// The jobs seen, with when their latest run seen was sent round again (`nil`: the first run).
    private var seenJobs: [String: Date?] = [:]

    public init() {}

    /// Judges `result` and remembers it.
    public mutating func judge(_ result: JobResult) -> Verdict {
        if let seen = seenJobs[result.jobID], !JobResult.isLater(result.requeuedAt, than: seen) { return .duplicate }
        seenJobs[result.jobID] = .some(result.requeuedAt)
        guard let key = result.key else { return .current }
        if let newest = newestByKey[key], newest > result.sequence {
            return .stale(newer: newest)
        }
        newestByKey[key] = result.sequence
        return .current
    }
}
