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
    }

    private var ended: BoundedDictionary<Ended>

    init(capacity: Int = 100_000) {
        ended = BoundedDictionary(capacity: capacity)
    }

    var capacity: Int { ended.capacity }

    subscript(jobID: String) -> Ended? {
        ended[jobID]
    }

    /// Records the first end of `jobID`; a later sighting only adds the stream offset the first lacked.
    mutating func record(_ jobID: String, _ status: JobStatus, offset: UInt64?) {
        guard let known = ended[jobID] else { return ended.set(Ended(status: status, offset: offset), for: jobID) }
        guard known.offset == nil, let offset else { return }
        ended.set(Ended(status: known.status, offset: offset), for: jobID)
    }
}
