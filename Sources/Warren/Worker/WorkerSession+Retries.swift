import AMQP
import Foundation

/// Retrying jobs whose handler failed with a retryable error.
///
/// The job message is republished, untouched but for its `x-warren-attempt` header, to a delay queue whose
/// messages expire back into the job's queue; the delivery is acknowledged once the broker confirmed the copy.
/// No result is published for an attempt that will be retried: a job has one terminal result.
extension WorkerSession {
    /// The wait before attempt `attempt + 1`: 1 s, 2 s, 4 s … at most 5 minutes, ±25 %.
    static func retryDelay(after attempt: Int) -> Duration {
        let base = min(Double(1 << min(attempt - 1, 20)), 300)
        return .milliseconds(Int(base * 1000 * Double.random(in: 0.75...1.25)))
    }

    /// Whether `job`, which failed with `error`, runs again.
    func shouldRetry(_ job: InFlightJob, after error: JobError) -> Bool {
        error.retryable && job.attempt < job.descriptor.attemptLimit
    }

    /// Republishes `job` to the delay queue for its next attempt and acks it once the broker has the copy.
    func retry(_ job: InFlightJob, after error: JobError) throws {
        let delay = Self.retryDelay(after: job.attempt)
        let milliseconds = Int(delay.components.seconds) * 1000 + Int(delay.components.attoseconds / 1_000_000_000_000_000)
        var bucket = 1
        while bucket * 1000 < milliseconds { bucket *= 2 }
        let delayQueue = Topology.retryQueue(for: job.queue, seconds: bucket)
        if !declaredRetryQueues.contains(delayQueue) {
            try Topology.declareRetryQueue(for: job.queue, seconds: bucket, on: connection, channel: Self.publishChannel)
            declaredRetryQueues.insert(delayQueue)
        }
        var properties = job.delivery.properties
        var headers = properties.headers ?? [:]
        headers[Topology.attemptHeader] = .int(Int64(job.attempt + 1))
        headers["x-death"] = nil
        properties.headers = headers
        properties.expiration = String(milliseconds)
        properties.persistent = true
        job.operation.job.logger.info(
            "job failed; retrying", metadata: ["error": "\(error)", "delayMs": "\(milliseconds)"])
        let copy = try publish(job.delivery.body, exchange: "", routingKey: delayQueue, properties: properties)
        try settle(job.delivery.deliveryTag, action: .ack, after: [copy])
    }
}
