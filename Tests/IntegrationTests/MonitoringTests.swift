import Foundation
import Testing
import Warren

extension Integration {
    /// The monitoring kit in deploy/: the Grafana dashboard and the Prometheus alert rules, checked against what a
    /// worker started as the compose file starts it serves.
    @Suite struct Monitoring {
        static let deploy = TestEnvironment.packageRoot.appendingPathComponent("deploy")

        @Test(
            "every dashboard panel and alert rule queries metrics a live worker serves; promtool and amtool pass them")
        func queriesNameServedMetrics() async throws {
            let metrics = try await Self.liveMetrics()
            let served = Set(metrics.samples.map(\.name)).union(metrics.types.keys)

            // The dashboard: JSON, every panel with queries on the provisioned data source.
            let dashboardURL = Self.deploy.appendingPathComponent("grafana/dashboards/warren.json")
            let dashboard = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: dashboardURL)) as? [String: Any])
            #expect(dashboard["uid"] as? String == "warren")
            let panels = Self.panels(in: dashboard).filter { $0["type"] as? String != "row" }
            #expect(panels.count >= 20)
            let provisioned = try String(
                contentsOf: Self.deploy.appendingPathComponent("grafana/provisioning/datasources/prometheus.yml"),
                encoding: .utf8)
            for panel in panels {
                let title = panel["title"] as? String ?? "?"
                let targets = try #require(panel["targets"] as? [[String: Any]], "\(title)")
                #expect(!targets.isEmpty, "\(title)")
                for target in targets {
                    let uid = (target["datasource"] as? [String: Any])?["uid"] as? String
                    #expect(
                        uid.map { provisioned.contains("uid: \($0)\n") } == true, "\(title): data source \(uid ?? "-")")
                    let expr = try #require(target["expr"] as? String, "\(title)")
                    let named = Self.metricNames(in: expr)
                    #expect(!named.isEmpty, "\(title): \(expr) names no metric")
                    for name in named {
                        #expect(served.contains(name), "\(title): \(name) is not served")
                    }
                }
            }

            // The alert rules: promtool checks them and runs their unit tests, each rule's metrics are served.
            let rules = Self.deploy.appendingPathComponent("prometheus/alerts.yml")
            for arguments in [
                ["check", "rules", rules.path],
                ["test", "rules", Self.deploy.appendingPathComponent("prometheus/alerts.test.yml").path],
                ["check", "config", Self.deploy.appendingPathComponent("prometheus/prometheus.yml").path],
            ] {
                let promtool = try ChildProcess(URL(fileURLWithPath: "/usr/bin/promtool"), arguments)
                #expect(promtool.waitForExit() == 0, "promtool \(arguments): \(promtool.stdout)\(promtool.stderr)")
            }
            let amtool = try ChildProcess(
                URL(fileURLWithPath: "/usr/bin/amtool"),
                ["check-config", Self.deploy.appendingPathComponent("alertmanager/alertmanager.yml").path])
            #expect(amtool.waitForExit() == 0, "\(amtool.stdout)\(amtool.stderr)")
            let text = try String(contentsOf: rules, encoding: .utf8)
            let alerts = text.matches(of: /\n\s+- alert: (\w+)\n/).map { String($0.1) }
            let exprs = text.matches(of: /\n\s+expr: ([^\n]+)\n/).map { String($0.1) }
            #expect(alerts.count == exprs.count && alerts.count >= 9, "every rule has its expr on one line")
            for (alert, expr) in zip(alerts, exprs) {
                let named = Self.metricNames(in: expr)
                // `up` is Prometheus's own, for each target it scrapes.
                #expect(!named.isEmpty || expr.hasPrefix("up{"), "\(alert): \(expr) names no metric")
                for name in named {
                    #expect(served.contains(name), "\(alert): \(name) is not served")
                }
            }
            for required in [
                "warren_broker_connected", "warren_broker_blocked", "warren_scheduler_leading",
                "warren_dead_lettered_total", "warren_jobs_total", "warren_job_queue_latency_seconds_bucket",
                "warren_max_memory_bytes",
            ] {
                #expect(exprs.contains { $0.contains(required) }, "a rule on \(required)")
            }
        }

        /// The Prometheus text of a worker started with the environment the compose file gives its workers (but
        /// for its broker, queue and port), after it ran jobs: one that succeeded and one retried.
        static func liveMetrics() async throws -> PrometheusText {
            let queue = TestEnvironment.uniqueName("monitoring")
            defer { BrokerProbe.delete(queue) }
            let directory = try TestEnvironment.temporaryDirectory()
            let schedules = directory.appendingPathComponent("schedules.json")
            try #"{"schedules": [{"name": "\#(queue)", "every": "1h", "type": "echo", "queue": "\#(queue)"}]}"#
                .write(to: schedules, atomically: true, encoding: .utf8)
            var environment = try composeWorkerEnvironment()
            #expect(environment["WARREN_MAX_MEMORY"] != nil && environment["WARREN_SCHEDULE"] != nil)
            let overrides = [
                "WARREN_URL": try TestEnvironment.brokerURL, "WARREN_QUEUE": queue, "WARREN_METRICS_PORT": "0",
                "WARREN_METRICS_HOST": "127.0.0.1", "WARREN_SCHEDULE": schedules.path, "WARREN_LOG_LEVEL": "info",
                "WARREN_STATE_DIR": directory.path,
            ]
            environment.merge(overrides) { $1 }
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary, ["worker"], environment: environment, name: "compose-like worker")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            let url = try worker.metricsURL()
            let results = try MessageTap.results()
            let producer = try Producer.forTests()
            let jobs = try [
                producer.enqueue(JobRequest(type: "echo", queue: queue)),
                producer.enqueue(
                    JobRequest(
                        type: "fail", input: ["retryable": true, "retryAfter": 0, "succeedFromAttempt": 2],
                        queue: queue)),
            ]
            _ = try results.waitForResults(jobs.map(\.id))
            return try await MetricsScrape.fetch(url) { metrics in
                metrics.value("warren_job_retries_total", ["type": "fail"]) == 1
                    && metrics.types["warren_scheduler_leading"] != nil
            }
        }

        /// The `WARREN_…` variables the compose file gives its workers.
        static func composeWorkerEnvironment() throws -> [String: String] {
            let config = try ComposeFile.config()
            let worker = try #require(config.range(of: "\n  worker:\n"))
            let section = config[worker.upperBound...].split(separator: "\n")
                .prefix { $0.hasPrefix("   ") }
            var environment: [String: String] = [:]
            for line in section {
                guard let match = line.firstMatch(of: /^      (WARREN_[A-Z_]+): '?([^']*)'?$/) else { continue }
                environment[String(match.1)] = String(match.2)
            }
            return environment
        }

        /// Every panel of `dashboard`, those in rows too.
        static func panels(in dashboard: [String: Any]) -> [[String: Any]] {
            let top = dashboard["panels"] as? [[String: Any]] ?? []
            return top + top.flatMap { $0["panels"] as? [[String: Any]] ?? [] }
        }

        /// The metrics a PromQL expression names: Warren's and the process's.
        static func metricNames(in expr: String) -> Set<String> {
            Set(expr.matches(of: /\b((?:warren|process)_[a-z_]+)\b/).map { String($0.1) })
        }
    }
}
