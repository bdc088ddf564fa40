import Metrics

/// What a scheduler counts, through the swift-metrics facade (exported by `--metrics-port`; without a backend,
/// every call is a no-op):
///
/// | metric | kind | labels |
/// | --- | --- | --- |
/// | `warren_recurring_jobs_enqueued_total` | counter | `schedule` |
/// | `warren_recurring_ticks_skipped_total` | counter: ticks skipped, missed while nothing enqueued them, later than their schedule's `maxLateness`, or whose earlier job still holds the key's unique lock (`uniqueFor`) | `schedule` |
/// | `warren_scheduler_leading` | gauge: 1 while this scheduler leads, else 0 | |
///
/// Thread safety: confined to the scheduler's thread (the facade's metric objects are safe from any thread).
struct SchedulerMetrics {
    private var enqueuedCounters: [String: Counter] = [:]
    private var skippedCounters: [String: Counter] = [:]
    private let leadingGauge = Gauge(label: "warren_scheduler_leading")

    /// Starts every schedule's counters at 0, so that they are there before their first tick.
    init(schedules: [String]) {
        for name in schedules {
            enqueuedCounters[name] = Counter(
                label: "warren_recurring_jobs_enqueued_total", dimensions: [("schedule", name)])
            skippedCounters[name] = Counter(
                label: "warren_recurring_ticks_skipped_total", dimensions: [("schedule", name)])
            enqueuedCounters[name]?.increment(by: 0)
            skippedCounters[name]?.increment(by: 0)
        }
        leadingGauge.record(0)
    }

    func enqueued(_ schedule: String) { enqueuedCounters[schedule]?.increment() }
    func skipped(_ schedule: String, count: Int) { skippedCounters[schedule]?.increment(by: count) }
    func leading(_ isLeading: Bool) { leadingGauge.record(isLeading ? 1 : 0) }
}
