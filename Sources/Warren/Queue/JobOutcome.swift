import Foundation

/// How an operation ended, as its operation reports it to the worker.
enum JobOutcome: Sendable {
    case succeeded(JSONValue)
    case failed(JobError)
    case cancelled(Cancellation)
}

/// An operation's report to the worker: which job, how it ended, when it ran.
struct FinishedJob: Sendable {
    let jobID: String
    let outcome: JobOutcome
    /// `nil` when the job never started (cancelled while it waited).
    let startedAt: Date?
    let finishedAt: Date
}
