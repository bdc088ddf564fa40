import MetricsTestKit
import Testing

@testable import Warren

@Suite("ProducerMetrics")
struct ProducerMetricsTests {
    @Test func countsEnqueuedAndRefusedJobsByQueue() throws {
        let backend = TestMetrics()
        let metrics = ProducerMetrics(factory: backend)
        metrics.enqueued(queue: "a", count: 3)
        metrics.enqueued(queue: "a")
        metrics.enqueued(queue: "b")
        metrics.refused(queue: "b", count: 2)
        #expect(try backend.expectCounter("warren_producer_jobs_enqueued_total", [("queue", "a")]).totalValue == 4)
        #expect(try backend.expectCounter("warren_producer_jobs_enqueued_total", [("queue", "b")]).totalValue == 1)
        #expect(try backend.expectCounter("warren_producer_jobs_refused_total", [("queue", "b")]).totalValue == 2)
        #expect(backend.counters(label: "warren_producer_jobs_refused_total").count == 1)
    }

    @Test func timesEachConfirmInNanosecondsByQueue() throws {
        let backend = TestMetrics()
        let metrics = ProducerMetrics(factory: backend)
        metrics.confirmed(queue: "a", after: .milliseconds(3))
        metrics.confirmed(queue: "a", after: .seconds(2) + .nanoseconds(5))
        metrics.confirmed(queue: "b", after: .microseconds(7))
        #expect(
            try backend.expectTimer("warren_producer_confirm_seconds", [("queue", "a")]).values
                == [3_000_000, 2_000_000_005])
        #expect(try backend.expectTimer("warren_producer_confirm_seconds", [("queue", "b")]).values == [7000])
    }
}
