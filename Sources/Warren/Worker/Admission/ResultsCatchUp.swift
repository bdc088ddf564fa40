import Foundation

/// A worker's first reading of the `warren.results` stream, for dependencies, up to where the stream ended when the
/// reading started: the `failed` results read meanwhile are held back, since a run of the same job after
/// `warren dead requeue`, stored later, supersedes its failure (``JobResult/requeuedAt``). Where the stream ended is
/// the offset of its last chunk, which a consumer at `x-stream-offset` `last` finds (the probe).
///
/// Thread safety: confined to the worker's broker thread.
struct ResultsCatchUp {
    /// Whether the reading has not yet got to where the stream ended.
    private(set) var isActive = false
    /// Whether it got there during this turn: it ends once the turn has read what came with that chunk.
    private(set) var reachedEnd = false
    /// The offset of the stream's last chunk when the reading started, once the probe found it.
    private var end: UInt64?
    /// The furthest offset read so far.
    private var furthest: UInt64?
    /// The failures held back, by job id.
    private var failures: [String: JobResult] = [:]

    /// The reading starts.
    mutating func start() {
        self = ResultsCatchUp()
        isActive = true
    }

    /// The probe found the stream's last chunk at `offset` (`nil`: a message without one, which ends the catching up).
    mutating func probed(lastChunk offset: UInt64?) {
        guard isActive else { return }
        end = offset
        guard let offset else {
            reachedEnd = true
            return
        }
        if let furthest, furthest >= offset { reachedEnd = true }
    }

    /// The reading got to `offset`.
    mutating func read(_ offset: UInt64?) {
        guard isActive, let offset else { return }
        furthest = max(furthest ?? offset, offset)
        if let end, offset >= end { reachedEnd = true }
    }

    /// Holds `result` back if it is a failure read while catching up; forgets a failure of its job held before,
    /// which a later run's result supersedes.
    /// - Returns: Whether it is held back.
    mutating func holds(_ result: JobResult) -> Bool {
        guard isActive, result.status == .failed else {
            failures[result.jobID] = nil
            return false
        }
        failures[result.jobID] = result
        return true
    }

    /// Whether a failure of job `jobID` is held back.
    func isHolding(_ jobID: String) -> Bool {
        failures[jobID] != nil
    }

    /// Ends the catching up; returns the failures held back, by job id.
    mutating func finish() -> [JobResult] {
        defer { self = ResultsCatchUp() }
        return failures.values.sorted { $0.jobID < $1.jobID }
    }

    /// Forgets everything (the connection was lost: the reading starts again on the next).
    mutating func reset() {
        self = ResultsCatchUp()
    }
}
