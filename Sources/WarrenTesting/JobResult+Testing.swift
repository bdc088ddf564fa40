import Foundation
import Warren

extension JobResult {
    /// The result of a job that succeeded with `output`: a dependency's result for a ``TestJob``.
    ///
    /// ```swift
    /// let download = try JobResult.succeeded(jobID: "download-1", output: Download.Output(path: "/tmp/a.png"))
    /// let job = try TestJob(Resize.self, .init(width: 64), dependencyResults: [download])
    /// ```
    /// - Throws: ``WarrenError`` (`invalidOutput`) when `output` cannot be encoded as JSON.
    public static func succeeded(jobID: String, type: String? = nil, output: some Encodable) throws -> JobResult {
        let json: JSONValue
        do {
            json = try output as? JSONValue ?? JSONValue(encoding: output)
        } catch {
            throw WarrenError(.invalidOutput, "the output of job \(jobID) cannot be encoded as JSON: \(error)")
        }
        return JobResult(jobID: jobID, type: type, outcome: .succeeded(json))
    }

    /// The result of a job that failed with `error`.
    public static func failed(jobID: String, type: String? = nil, error: JobError) -> JobResult {
        JobResult(jobID: jobID, type: type, outcome: .failed(error))
    }

    /// The result of a job that was cancelled.
    public static func cancelled(
        jobID: String, type: String? = nil, cancellation: Cancellation = .requested
    ) -> JobResult {
        JobResult(jobID: jobID, type: type, outcome: .cancelled(cancellation))
    }

    /// A result made by hand, for a job of no worker.
    private init(jobID: String, type: String?, outcome: JobOutcome<JSONValue>) {
        self.init(
            jobID: jobID, type: type, sequence: 1, key: nil, status: outcome.status, output: outcome.output,
            error: outcome.error, cancellation: outcome.cancellation, workerID: "warren.testing",
            timings: JobTimings(finishedAt: Date()))
    }

    /// The result a worker publishes for the job of `context` when it ends with `outcome`.
    init(
        ending context: JobContext, with outcome: JobOutcome<JSONValue>, workerID: String,
        timings: JobTimings = JobTimings(finishedAt: Date())
    ) {
        self.init(
            jobID: context.jobID, type: context.type, sequence: context.sequence, key: context.key,
            status: outcome.status, output: outcome.output, error: outcome.error, cancellation: outcome.cancellation,
            attempt: context.attempt, workerID: workerID, timings: timings)
    }
}
