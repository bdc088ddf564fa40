import Foundation

/// The jobs a worker knows have ended, with their status and, once the `warren.results` stream showed their result,
/// the offset of the stream message that holds it; kept once dependencies are in play: its own, and everyone's from
/// the stream. Bounded: past ``capacity`` the oldest are forgotten.
///
/// Thread safety: confined to the worker's broker thread.
struct FinishedJobs {
    struct Ended {
        let status: JobStatus
        /// Where the stream holds the job's result, once the worker read it there.
        var offset: UInt64?
        /// When `warren dead requeue` sent round the run that ended so (``JobResult/requeuedAt``).
        var requeuedAt: Date?
    }

    private var ended: BoundedDictionary<Ended>

    init(capacity: Int = 100_000) {
        ended = BoundedDictionary(capacity: capacity)
    }

    var capacity: Int { ended.capacity }

    subscript(jobID: String) -> Ended? {
        ended[jobID]
    }

    /// Records how `result`'s job ended: its first end, or the end of a later run (`warren dead requeue` sent it
    /// round again since), which replaces the earlier; another sighting of the same run only adds the stream
    /// offset the first lacked.
    /// - Returns: Whether `result` is of the job's latest run known; `false` for an earlier run's, read late.
    @discardableResult
    mutating func record(_ result: JobResult, offset: UInt64?) -> Bool {
        let end = Ended(status: result.status, offset: offset, requeuedAt: result.requeuedAt)
        guard let known = ended[result.jobID], !JobResult.isLater(result.requeuedAt, than: known.requeuedAt) else {
            ended.set(end, for: result.jobID)
            return true
        }
        guard !JobResult.isLater(known.requeuedAt, than: result.requeuedAt) else { return false }
        if known.offset == nil, let offset {
            ended.set(Ended(status: known.status, offset: offset, requeuedAt: known.requeuedAt), for: result.jobID)
        }
        return true
    }
}
