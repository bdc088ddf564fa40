import AMQP
import Foundation

extension JobResult {
    /// The result of the job `descriptor` describes, which came with `delivery`, as worker `workerID` ends it.
    init(
        _ descriptor: OperationDescriptor, delivery: Delivery, workerID: String, status: JobStatus,
        cancellation: Cancellation? = nil, timings: JobTimings, output: JSONValue? = nil, error: JobError? = nil
    ) {
        self.init(
            jobID: descriptor.id, type: descriptor.type, sequence: descriptor.sequence, key: descriptor.key,
            status: status, output: output, error: error, cancellation: cancellation, attempt: delivery.attempt,
            redelivered: delivery.redelivered, requeuedAt: delivery.requeuedAt, workerID: workerID, timings: timings)
    }
}
