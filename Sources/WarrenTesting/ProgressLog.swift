import Synchronization

/// The progress reports of one job, and the streams that follow them.
///
/// Thread safety: locked. The job's thread appends, a test's task reads and follows.
final class ProgressLog: Sendable {
    private struct State {
        var reports: [ProgressReport] = []
        var followers: [AsyncStream<ProgressReport>.Continuation] = []
        var isClosed = false
    }

    private let state = Mutex(State())

    var reports: [ProgressReport] { state.withLock { $0.reports } }

    func append(_ report: ProgressReport) {
        // Yielded under the lock, so that a follower sees the reports in their order.
        state.withLock { state in
            guard !state.isClosed else { return }
            state.reports.append(report)
            for follower in state.followers { follower.yield(report) }
        }
    }

    /// The reports so far, then each new one, until the job ends.
    func follow() -> AsyncStream<ProgressReport> {
        let (stream, continuation) = AsyncStream.makeStream(of: ProgressReport.self)
        state.withLock { state in
            for report in state.reports { continuation.yield(report) }
            if state.isClosed {
                continuation.finish()
            } else {
                state.followers.append(continuation)
            }
        }
        return stream
    }

    /// Ends the streams: the job ended.
    func close() {
        let followers = state.withLock { state in
            state.isClosed = true
            defer { state.followers = [] }
            return state.followers
        }
        for follower in followers { follower.finish() }
    }
}
