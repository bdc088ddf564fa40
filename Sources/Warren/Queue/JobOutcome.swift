import Foundation

/// How a job ended: its output, its failure or its cancellation.
///
/// ```swift
/// switch try await job.result() {
/// case .succeeded(let thumbnail): show(thumbnail)
/// case .failed(let error): log(error.code, error.message)
/// case .cancelled(let cancellation): log(cancellation.reason)
/// }
/// ```
///
/// A worker's operation reports a `JobOutcome<JSONValue>`; a typed handle gives the definition's `Output`.
public enum JobOutcome<Output: Sendable>: Sendable {
    /// The operation returned `Output`.
    case succeeded(Output)
    /// The operation threw, or the job could not run: ``JobError/code`` says which.
    case failed(JobError)
    /// The job was cancelled before it ended: ``Cancellation/reason`` says why.
    case cancelled(Cancellation)

    /// The output of a job that succeeded.
    /// - Throws: The ``JobError`` of a job that failed; the ``Cancellation`` of one that was cancelled.
    public func get() throws -> Output {
        switch self {
        case .succeeded(let output): output
        case .failed(let error): throw error
        case .cancelled(let cancellation): throw cancellation
        }
    }

    /// The output, when the job succeeded.
    public var output: Output? {
        if case .succeeded(let output) = self { return output }
        return nil
    }

    /// The error, when the job failed.
    public var error: JobError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    /// The cancellation, when the job was cancelled.
    public var cancellation: Cancellation? {
        if case .cancelled(let cancellation) = self { return cancellation }
        return nil
    }

    /// The status a result message gives this outcome.
    public var status: JobStatus {
        switch self {
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }
}

extension JobOutcome: Equatable where Output: Equatable {}

/// An operation's report to the worker: which job, how it ended, when it ran.
package struct FinishedJob: Sendable {
    package let jobID: String
    package let outcome: JobOutcome<JSONValue>
    /// `nil` when the job never started (cancelled while it waited).
    package let startedAt: Date?
    package let finishedAt: Date
}
