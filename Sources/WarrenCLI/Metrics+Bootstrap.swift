import Metrics
import Prometheus
import Synchronization

/// Sets up swift-metrics once per process, backed by a Prometheus registry.
enum MetricsSetup {
    private static let registry = Mutex<PrometheusCollectorRegistry?>(nil)

    /// Bootstraps on the first call; returns the registry that receives every metric.
    static func bootstrap() -> PrometheusCollectorRegistry {
        registry.withLock { registry in
            if let registry { return registry }
            let made = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: made)
            // Jobs run from microseconds (no-op) to minutes.
            factory.defaultDurationHistogramBuckets = [
                .microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10),
                .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(10),
                .seconds(30), .seconds(60), .seconds(300),
            ]
            // Jobs wait in the broker from milliseconds to hours behind a backlog.
            factory.durationHistogramBuckets["warren_job_queue_latency_seconds"] = [
                .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
                .seconds(10), .seconds(30), .seconds(60), .seconds(300), .seconds(900), .seconds(1800), .seconds(3600),
                .seconds(14_400), .seconds(86_400),
            ]
            MetricsSystem.bootstrap(factory)
            registry = made
            return made
        }
    }
}
