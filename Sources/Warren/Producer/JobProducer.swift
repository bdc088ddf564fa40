/// What enqueues jobs, cancels them and hands back their results.
///
/// ```swift
/// func startReport(for user: String, jobs: some JobProducer) async throws -> String {
///     let job = try await jobs.enqueue(Report.self, .init(user: user), options: .init(key: "report-\(user)"))
///     return job.id
/// }
/// ```
///
/// ``SharedProducer`` talks to a broker. `InMemoryJobs` in the `WarrenTesting` module runs the jobs in the same
/// process, for tests. Code written against this protocol takes either.
public protocol JobProducer: Sendable {
    /// Enqueues jobs and returns their descriptors once they are enqueued, in the order of `requests`.
    /// - Parameters:
    ///   - requests: The jobs.
    ///   - watch: Send their results to this producer, for ``result(of:timeout:)``.
    func enqueue(_ requests: [JobRequest], watch: Bool) async throws -> [OperationDescriptor]

    /// The result of a job this producer enqueued with `watch: true`, once it arrives.
    /// - Throws: ``WarrenError`` (`timeout`) when no result came within `timeout`; `CancellationError` when the
    ///   task was cancelled.
    func result(of jobID: String, timeout: Duration) async throws -> JobResult

    /// Cancels jobs wherever they are: waiting, parked or running.
    func cancel(jobIDs: [String]) async throws

    /// Cancels every job of `key` whose sequence is below `sequence`.
    func supersede(key: String, before sequence: UInt64) async throws
}

extension JobProducer {
    /// Enqueues a job of `definition` with `input`, and returns a handle to await its typed result.
    ///
    /// ```swift
    /// let job = try await producer.enqueue(Shout.self, .init(text: "hello"))
    /// switch try await job.result() {
    /// case .succeeded(let output): print(output.text)
    /// case .failed(let error): print("failed: \(error)")
    /// case .cancelled(let cancellation): print("cancelled: \(cancellation)")
    /// }
    /// ```
    /// - Parameters:
    ///   - definition: The operation type: its name, input and output.
    ///   - input: What the job takes.
    ///   - options: How to schedule it. Default: at once, normal priority, on `warren.default`.
    ///   - watch: Send its result to this producer, for ``EnqueuedJob/result(timeout:)``. Default: `true`.
    /// - Throws: ``WarrenError``: `invalidInput` when `input` cannot be encoded as JSON, naming the field; what
    ///   ``JobProducer/enqueue(_:watch:)`` throws.
    public func enqueue<Definition: OperationDefinition>(
        _ definition: Definition.Type, _ input: Definition.Input, options: JobOptions = JobOptions(),
        watch: Bool = true
    ) async throws -> EnqueuedJob<Definition> {
        let request = try options.request(for: Definition.self, input: input)
        let descriptor = try await enqueue([request], watch: watch)[0]
        return EnqueuedJob(descriptor: descriptor, producer: self)
    }
}
