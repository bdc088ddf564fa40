import Foundation
import Testing
import Warren

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `/livez` and `/readyz` beside `/metrics`, and `warren health`, against what the worker goes through: refused
/// credentials while it reconnects, and a broker that blocks it.
extension Integration {
    @Suite struct Health {
        @Test("a worker is ready while connected, not ready (but live) while its credentials are refused, ready again")
        func reconnecting() async throws {
            let user = TestEnvironment.uniqueName("health-user")
            let password = "Pw" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16)
            try Chaos.brokerCtl(["add_user", user, password])
            defer { try? Chaos.brokerCtl(["delete_user", user]) }
            try Chaos.brokerCtl(["set_permissions", "-p", "/", user, ".*", ".*", ".*"])
            let url = try TestEnvironment.brokerURL
                .replacingOccurrences(of: "guest:guest@", with: "\(user):\(password)@")
            let queue = TestEnvironment.uniqueName("health")
            defer { BrokerProbe.delete(queue) }
            let id = TestEnvironment.uniqueName("health-worker")
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                ["worker", "--url", url, "--queue", queue, "--worker-id", id, "--metrics-port", "0"],
                name: "worker \(id)")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            let metrics = try worker.metricsURL()
            let port = try #require(metrics.port)

            let ready = try await HealthScrape.fetch(metrics, "/readyz")
            #expect(ready.status == 200)
            let component = try #require(ready.component("worker"))
            #expect(component["connection"] as? String == "connected")
            #expect(component["broker"] as? String == url.replacingOccurrences(of: ":\(password)@", with: ":***@"))
            #expect(ready.json["ready"] as? Bool == true && ready.json["live"] as? Bool == true)
            let says = try CLI.run(["health", "--port", "\(port)"])
            #expect(says.status == 0, "\(says.stderr)")
            #expect(says.stdout.hasPrefix("worker: ready, connected to amqp://\(user):***@"), "\(says.stdout)")
            #expect((try await MetricsScrape.fetch(metrics)).value("warren_broker_connected") == 1)

            try Chaos.brokerCtl(["change_password", user, password + "changed"])
            try Chaos.closeConnections(named: "warren worker \(id)", reason: "test: the password changed")
            // The first try to reconnect comes a moment later: the connection was lost soon after it was made.
            let refused = try await HealthScrape.fetch(metrics, "/readyz") {
                $0.status == 503
                    && ($0.component("worker")?["lastError"] as? String)?.contains("ACCESS_REFUSED") == true
            }
            #expect(refused.status == 503)
            let lost = try #require(refused.component("worker"))
            #expect(lost["connection"] as? String == "reconnecting")
            #expect((lost["lastError"] as? String)?.contains("ACCESS_REFUSED") == true, "\(lost)")
            #expect(refused.json["live"] as? Bool == true)
            #expect((try await HealthScrape.fetch(metrics, "/livez")).status == 200)
            let notReady = try CLI.run(["health", "--port", "\(port)"])
            #expect(notReady.status == 1)
            #expect(notReady.stdout.contains("worker: not ready, reconnecting since"), "\(notReady.stdout)")
            #expect(notReady.stdout.contains("ACCESS_REFUSED"), "\(notReady.stdout)")
            // --json: the endpoint's report, as one line of JSON that reads back (its error text holds quotes).
            let asJSON = try CLI.run(["health", "--port", "\(port)", "--json"])
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(asJSON.stdout.utf8)) as? [String: Any], "\(asJSON.stdout)")
            let reported = (report["components"] as? [String: Any])?["worker"] as? [String: Any]
            #expect((reported?["lastError"] as? String)?.contains("ACCESS_REFUSED") == true, "\(asJSON.stdout)")
            #expect(asJSON.stdout.split(separator: "\n").count == 1)
            #expect(try CLI.run(["health", "--port", "\(port)", "--live"]).status == 0)
            #expect((try await MetricsScrape.fetch(metrics)).value("warren_broker_connected") == 0)

            try Chaos.brokerCtl(["change_password", user, password])
            let back = try await HealthScrape.fetch(metrics, "/readyz", timeout: .seconds(60)) { $0.status == 200 }
            #expect(back.status == 200)
            #expect(back.component("worker")?["lastError"] == nil)
            #expect(!worker.stderr.contains(password), "the password is never logged")
        }

        @Test("a worker the broker blocks (a memory alarm) is not ready but live, and ready once unblocked")
        func blocked() async throws {
            let queue = TestEnvironment.uniqueName("health-blocked")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--metrics-port", "0"])
            defer { worker.terminate() }
            let metrics = try worker.metricsURL()
            let producer = try Producer.forTests()
            // Long enough to end after the alarm is on (rabbitmqctl takes seconds to start on a loaded machine).
            let job = try producer.enqueue(
                JobRequest(type: "sleep", input: ["seconds": 5], queue: queue), watch: true)
            try worker.waitForStart(of: job.id)
            // The broker blocks connections that publish: the worker's, once the job's result goes out.
            try Chaos.brokerCtl(["set_vm_memory_high_watermark", "0.00001"])
            var alarm = true
            defer { if alarm { try? Chaos.brokerCtl(["set_vm_memory_high_watermark", "0.4"]) } }
            let blocked = try await HealthScrape.fetch(metrics, "/readyz") { $0.status == 503 }
            #expect(blocked.status == 503)
            let component = try #require(blocked.component("worker"))
            #expect(component["blockedReason"] as? String == "low on memory", "\(component)")
            #expect(component["connection"] as? String == "connected")
            #expect((try await HealthScrape.fetch(metrics, "/livez")).status == 200)
            #expect((try await MetricsScrape.fetch(metrics)).value("warren_broker_blocked") == 1)

            try Chaos.brokerCtl(["set_vm_memory_high_watermark", "0.4"])
            alarm = false
            #expect((try await HealthScrape.fetch(metrics, "/readyz") { $0.status == 200 }).status == 200)
            #expect(try producer.waitForResult(of: job.id, timeout: .seconds(30)).status == .succeeded)
            #expect((try await MetricsScrape.fetch(metrics)).value("warren_broker_blocked") == 0)
        }

        @Test("the port --metrics-port 0 picks is logged even when only warnings are")
        func pickedPortAtWarningLevel() async throws {
            let queue = TestEnvironment.uniqueName("health-port")
            defer { BrokerProbe.delete(queue) }
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                [
                    "worker", "--url", try TestEnvironment.brokerURL, "--queue", queue, "--metrics-port", "0",
                    "--log-level", "warning",
                ], name: "worker at warning level")
            defer { worker.terminate() }
            let live = try await HealthScrape.fetch(try worker.metricsURL(), "/livez")
            #expect(live.status == 200)
        }

        @Test("warren health: an endpoint that is not Warren's, or nothing listening, exits 1 with the reason")
        func probeFailures() throws {
            let nothing = try CLI.run(["health", "--port", "1"])
            #expect(nothing.status == 1)
            #expect(nothing.stderr.contains("http://127.0.0.1:1/readyz: cannot connect"), "\(nothing.stderr)")
            let zero = try CLI.run(["health", "--port", "0"])
            #expect(zero.status == 64)
            // The broker's own port answers no HTTP.
            let amqp = try #require(URLComponents(string: try TestEnvironment.brokerURL)?.port)
            let broker = try CLI.run(["health", "--port", "\(amqp)", "--timeout", "5"])
            #expect(broker.status == 1)
            #expect(broker.stderr.contains("the answer is not HTTP"), "\(broker.stderr)")
            // Some other HTTP server: said on stderr, as every other failure.
            let server = try ChildProcess(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [
                    "-u", "-c",
                    """
                    import http.server
                    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
                    print("port", server.server_address[1], file=__import__("sys").stderr)
                    server.serve_forever()
                    """,
                ], name: "http server")
            defer { server.terminate() }
            try server.waitForStderr(containing: "port ")
            let port = try #require(
                server.stderr.split(separator: " ").last.flatMap {
                    Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
                })
            let other = try CLI.run(["health", "--port", "\(port)"])
            #expect(other.status == 1)
            #expect(other.stdout.isEmpty, "\(other.stdout)")
            #expect(
                other.stderr.contains("answered 501 Not Implemented, not a Warren health report"), "\(other.stderr)")
        }
    }
}

/// What a health endpoint answered.
struct HealthAnswer {
    let status: Int
    let json: [String: Any]

    func component(_ name: String) -> [String: Any]? {
        (json["components"] as? [String: Any])?[name] as? [String: Any]
    }
}

enum HealthScrape {
    /// Fetches `path` beside `metrics` (a `/metrics` URL), and checks the answer is JSON.
    static func fetch(_ metrics: URL, _ path: String) async throws -> HealthAnswer {
        let url = try #require(URL(string: path, relativeTo: metrics))
        let (data, response) = try await URLSession.shared.data(from: url)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/json")
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return HealthAnswer(status: http.statusCode, json: json)
    }

    /// Fetches `path` until `done` holds for the answer, or `timeout` passes; returns the last answer.
    static func fetch(
        _ metrics: URL, _ path: String, timeout: Duration = .seconds(20), until done: (HealthAnswer) -> Bool
    ) async throws -> HealthAnswer {
        let deadline = ContinuousClock.now + timeout
        while true {
            let answer = try await fetch(metrics, path)
            if done(answer) || ContinuousClock.now >= deadline { return answer }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
