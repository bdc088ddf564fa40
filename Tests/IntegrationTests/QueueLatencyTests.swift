import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct QueueLatency {
        @Test("queue latency counts the time jobs waited in the broker before a worker started them, by queue and type")
        func latencyOfWaitingJobs() async throws {
            let queue = TestEnvironment.uniqueName("latency")
            defer { BrokerProbe.delete(queue) }
            let results = try MessageTap.results()
            let producer = try Producer.forTests()
            let jobs = try (0..<3).map { _ in try producer.enqueue(JobRequest(type: "echo", queue: queue)) }
            // The jobs wait in the broker, no worker there, for at least this long.
            let waited = 2.0
            try await Task.sleep(for: .seconds(waited))
            let worker = try CLI.startWorker(queue: queue, arguments: ["--metrics-port", "0"])
            defer { worker.terminate() }
            let url = try worker.metricsURL()
            _ = try results.waitForResults(jobs.map(\.id))
            let labels = ["queue": queue, "type": "echo"]
            let metrics = try await MetricsScrape.fetch(url) { metrics in
                metrics.value("warren_job_queue_latency_seconds_count", labels) == 3
            }
            #expect(metrics.types["warren_job_queue_latency_seconds"] == "histogram")
            #expect(metrics.value("warren_job_queue_latency_seconds_count", labels) == 3)
            #expect((metrics.value("warren_job_queue_latency_seconds_sum", labels) ?? 0) >= 3 * waited)
            let underASecond = metrics.samples.first {
                $0.name == "warren_job_queue_latency_seconds_bucket" && $0.labels["queue"] == queue
                    && Double($0.labels["le"] ?? "") == 1
            }
            #expect(underASecond?.value == 0, "no job started within a second of its creation")
            #expect(metrics.value("warren_build_info", ["version": WarrenVersion.string]) == 1)
            #expect((metrics.value("process_resident_memory_bytes") ?? 0) > 1_048_576)
        }
    }
}
