import Metrics

/// What a producer counts and measures, through the swift-metrics facade: whatever backend the process bootstrapped
/// receives it; without one, every call is a no-op.
///
/// | metric | kind | labels |
/// | --- | --- | --- |
/// | `warren_producer_jobs_enqueued_total` | counter: jobs the broker confirmed | `queue` |
/// | `warren_producer_jobs_refused_total` | counter: jobs sent that the broker did not take | `queue` |
/// | `warren_producer_confirm_seconds` | timer (histogram): a job's publish → the broker's answer | `queue` |
///
/// Thread safety: confined to the thread of its ``Producer``; the facade's metric objects, made once per queue,
/// are safe from any thread themselves.
final class ProducerMetrics {
    private let factory: any MetricsFactory
    private var enqueuedCounters: [String: Counter] = [:]
    private var refusedCounters: [String: Counter] = [:]
    private var confirmTimers: [String: Timer] = [:]

    /// Metrics recorded through `factory`. Default: the backend the process bootstrapped.
    init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// Counts `count` jobs of `queue` that the broker confirmed.
    func enqueued(queue: String, count: Int = 1) {
        counter(queue, in: &enqueuedCounters, label: "warren_producer_jobs_enqueued_total").increment(by: count)
    }

    /// Counts `count` jobs of `queue` that were sent and that the broker did not take: it refused them (`basic.nack`)
    /// after the retries, took them nowhere (`basic.return`), or closed the channel at them.
    func refused(queue: String, count: Int = 1) {
        counter(queue, in: &refusedCounters, label: "warren_producer_jobs_refused_total").increment(by: count)
    }

    /// Records how long the broker took to answer the publish of a job of `queue`.
    func confirmed(queue: String, after delay: Duration) {
        let timer =
            confirmTimers[queue]
            ?? Timer(label: "warren_producer_confirm_seconds", dimensions: [("queue", queue)], factory: factory)
        confirmTimers[queue] = timer
        let (seconds, attoseconds) = delay.components
        timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    private func counter(_ queue: String, in counters: inout [String: Counter], label: String) -> Counter {
        if let counter = counters[queue] { return counter }
        let made = Counter(label: label, dimensions: [("queue", queue)], factory: factory)
        counters[queue] = made
        return made
    }
}
