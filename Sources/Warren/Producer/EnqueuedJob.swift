/// A job of a known ``OperationDefinition`` that a producer enqueued: its descriptor, and a way to its typed result.
///
/// ```swift
/// let job = try await producer.enqueue(WordCount.self, .init(text: "a b c"))
/// let counts = try await job.result().get()   // WordCount.Output
/// ```
///
/// Thread safety: immutable.
public struct EnqueuedJob<Definition: OperationDefinition>: Sendable {
    /// What was enqueued: id, sequence number, key and the rest.
    public let descriptor: OperationDescriptor
    /// The producer that enqueued the job, which its result comes to.
    public let producer: any JobProducer

    /// A handle on a job that `producer` enqueued.
    public init(descriptor: OperationDescriptor, producer: any JobProducer) {
        self.descriptor = descriptor
        self.producer = producer
    }

    /// The job's id.
    public var id: String { descriptor.id }

    /// The job's sequence number: higher for a newer job of the same key.
    public var sequence: UInt64 { descriptor.sequence }

    /// Waits for the job to end, and gives its typed output, its failure or its cancellation.
    /// - Parameter timeout: How long to wait. Default: `nil`, until the result comes or the task is cancelled.
    /// - Throws: ``WarrenError``: `invalidOutput` when the output does not decode as `Definition.Output`, naming
    ///   the field; `timeout` when no result came in time; what the producer's ``JobProducer/result(of:timeout:)``
    ///   throws, such as `invalidConfiguration` for a job enqueued with `watch: false`.
    public func result(timeout: Duration? = nil) async throws -> JobOutcome<Definition.Output> {
        try await producer.result(of: id, timeout: timeout ?? Self.longestWait).outcome(as: Definition.self)
    }

    /// Cancels the job wherever it is. Its result then says `cancelled`, unless it ended first.
    public func cancel() async throws {
        try await producer.cancel(jobIDs: [id])
    }

    /// The wait of a result without a timeout: a year, as long as a deadline can be told apart from none.
    static var longestWait: Duration { .seconds(31_536_000) }
}

extension JobResult {
    /// How the job ended, its output decoded as `definition`'s `Output`.
    ///
    /// ```swift
    /// for try await result in reader.results() where result.type == Thumbnail.type {
    ///     let outcome = try result.outcome(as: Thumbnail.self)
    /// }
    /// ```
    /// - Throws: ``WarrenError`` (`invalidOutput`) when the output does not decode, naming the operation type and
    ///   the field.
    public func outcome<Definition: OperationDefinition>(
        as definition: Definition.Type
    ) throws -> JobOutcome<Definition.Output> {
        switch status {
        case .succeeded:
            let output = output ?? .null
            if let same = output as? Definition.Output { return .succeeded(same) }
            do {
                return .succeeded(try output.decode(as: Definition.Output.self))
            } catch let error as DecodingError {
                throw WarrenError(
                    .invalidOutput,
                    "output of job \(jobID) does not match operation type '\(Definition.type)': "
                        + error.summary(root: "output"))
            }
        case .failed:
            return .failed(error ?? JobError(code: "handlerError", message: "the job failed without an error"))
        case .cancelled:
            return .cancelled(cancellation ?? .requested)
        }
    }
}
