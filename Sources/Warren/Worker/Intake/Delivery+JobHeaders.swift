import AMQP
import Foundation

/// What a job delivery's properties and headers say of the job, beside its descriptor.
extension Delivery {
    /// The queue a job's result and progress reports go to, through the default exchange: its `reply_to`
    /// property, unless that is absent or empty.
    var replyQueue: String? {
        guard let replyTo = properties.replyTo, !replyTo.isEmpty else { return nil }
        return replyTo
    }

    /// The attempt this delivery is: the one its message carries, one more if the broker redelivered it.
    var attempt: Int {
        let sent = sentAttempt
        return redelivered && sent < Int.max ? sent + 1 : sent
    }

    /// The attempt number the message itself carries (its `x-warren-attempt` header, else 1), not counting a
    /// redelivery. A number below 1 is no attempt number, and counts as none.
    var sentAttempt: Int {
        guard let sent = properties.headers?[Topology.attemptHeader]?.intValue, sent >= 1 else { return 1 }
        return Int(sent)
    }

    /// When `warren dead requeue` last sent this job round (its `x-warren-requeued-at` header), if it did.
    var requeuedAt: Date? {
        headerDate(Topology.requeuedAtHeader)
    }

    /// When the job may start: its `notBefore`, or the time a retry's not-before header names (a handler's
    /// ``JobError/retryAfter``), whichever is later; `nil` when neither says.
    func notBefore(of descriptor: OperationDescriptor) -> Date? {
        guard let header = headerDate(Topology.notBeforeHeader) else { return descriptor.notBefore }
        return max(header, descriptor.notBefore ?? header)
    }

    /// The instant a header holds as an integer of milliseconds since 1970. A time the wire format's dates cannot
    /// hold is no time: ignored, as a header of another type is.
    private func headerDate(_ name: String) -> Date? {
        properties.headers?[name]?.intValue
            .map { Date(timeIntervalSince1970: Double($0) / 1000) }
            .flatMap { WireCoding.dateRange.contains($0.timeIntervalSince1970) ? $0 : nil }
    }
}
