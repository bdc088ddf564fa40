import Foundation
import Glibc
import Testing
import Warren

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension Integration {
    @Suite struct Metrics {
        @Test("the worker serves valid Prometheus text at --metrics-port, and its counters move when jobs run")
        func endpointCountsJobs() async throws {
            let queue = TestEnvironment.uniqueName("metrics")
            defer { BrokerProbe.delete(queue) }
            let results = try MessageTap.results()
            // A state directory of its own: the journals of workers other tests killed while their jobs ran would
            // have it report dead workers, moving a counter this test expects at zero.
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--metrics-port", "0", "--log-format", "json", "--width", "2"],
                environment: ["WARREN_STATE_DIR": try TestEnvironment.temporaryDirectory().path])
            defer { worker.terminate() }
            let url = try worker.metricsURL()

            let before = try await MetricsScrape.fetch(url)
            #expect(before.value("warren_prefetch") == 2)
            for counter in [
                "warren_reconnects_total", "warren_dead_workers_reported_total", "warren_jobs_run_alone_total",
            ] {
                #expect(before.value(counter) == 0, "\(counter) is there from the start")
            }
            for reason in ["unknownType", "invalidInput", "handlerError"] {
                #expect(before.value("warren_dead_lettered_total", ["reason": reason]) == 0, "\(reason) from the start")
            }
            #expect(before.value("warren_unique_lock_releases_total", ["outcome": "released"]) == 0)
            #expect(before.value("warren_local_queue_executing", ["queue": "default"]) == 0)
            #expect(before.value("warren_local_queue_waiting", ["queue": "default"]) == 0)
            #expect(before.value("warren_local_queue_width", ["queue": "default"]) == 2)
            let echoes = ["type": "echo", "status": "succeeded"]
            let echoesBefore = before.value("warren_jobs_total", echoes) ?? 0

            let producer = try Producer.forTests()
            let jobs = try (0..<3).map { index in
                try producer.enqueue(JobRequest(type: "echo", input: ["n": .number(Double(index))], queue: queue))
            }
            let failing = try producer.enqueue(
                JobRequest(type: "fail", input: ["retryable": false], queue: queue, maxAttempts: 1))
            let retried = try producer.enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true, "retryAfter": 0, "succeedFromAttempt": 2], queue: queue))
            _ = try results.waitForResults(jobs.map(\.id) + [failing.id, retried.id])

            let after = try await MetricsScrape.fetch(url) { metrics in
                metrics.value("warren_jobs_total", echoes) == echoesBefore + 3
                    && metrics.value("warren_jobs_total", ["type": "fail", "status": "failed"]) == 1
            }
            #expect(after.value("warren_job_retries_total", ["type": "fail"]) == 1)
            #expect(after.types["warren_jobs_total"] == "counter")
            #expect(after.value("warren_jobs_total", echoes) == echoesBefore + 3)
            #expect(after.value("warren_jobs_total", ["type": "fail", "status": "failed"]) == 1)
            #expect(after.value("warren_dead_lettered_total", ["reason": "requestedFailure"]) == 1)
            #expect(after.types["warren_job_run_seconds"] == "histogram")
            #expect(after.types["warren_job_wait_seconds"] == "histogram")
            #expect((after.value("warren_job_run_seconds_count", ["type": "echo"]) ?? 0) >= 3)
            #expect((after.value("warren_job_wait_seconds_count", ["type": "echo"]) ?? 0) >= 3)
            // Every attempt that ran is timed, the one that failed and was retried too.
            #expect(after.value("warren_job_run_seconds_count", ["type": "fail"]) == 3)
            #expect(after.value("warren_job_wait_seconds_count", ["type": "fail"]) == 3)
            #expect(after.value("warren_local_queue_executing", ["queue": "default"]) == 0)
            #expect(after.value("warren_local_queue_waiting", ["queue": "default"]) == 0)
            #expect(after.value("warren_reconnects_total") ?? 0 == 0)

            for line in worker.stderr.split(separator: "\n") {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(["timestamp", "level", "label", "message"].allSatisfy { object?[$0] is String }, "\(line)")
            }
            let password = try #require(URLComponents(string: try TestEnvironment.brokerURL)?.password)
            #expect(!worker.stderr.contains(":\(password)@"), "the broker's password is never logged")
            #expect(worker.stderr.contains(":***@"))
        }

        @Test("a job holding the local queue shows in the executing and waiting gauges")
        func localQueueGauges() async throws {
            let queue = TestEnvironment.uniqueName("metrics-gauges")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(
                queue: queue, arguments: ["--metrics-port", "0", "--width", "1", "--prefetch", "2"])
            defer { worker.terminate() }
            let url = try worker.metricsURL()
            let producer = try Producer.forTests()
            let running = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers([1, 2, 3], delayMs: 3000), queue: queue))
            _ = try producer.enqueue(JobRequest(type: "echo", queue: queue))
            try worker.waitForStart(of: running.id)
            let metrics = try await MetricsScrape.fetch(url) { metrics in
                metrics.value("warren_local_queue_waiting", ["queue": "default"]) == 1
            }
            #expect(metrics.value("warren_local_queue_executing", ["queue": "default"]) == 1)
            #expect(metrics.value("warren_local_queue_waiting", ["queue": "default"]) == 1)
            try producer.cancel(jobIDs: [running.id])
        }

        @Test("jobs waiting in the worker outside its local queues show in a gauge by what they wait for")
        func waitingInWorkerGauge() async throws {
            let queue = TestEnvironment.uniqueName("metrics-held")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(
                queue: queue,
                arguments: ["--metrics-port", "0", "--width", "2", "--prefetch", "4", "--rate-limit", "echo=1/h"])
            defer { worker.terminate() }
            let url = try worker.metricsURL()
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let running = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers([1, 2, 3], delayMs: 10_000), queue: queue))
            try worker.waitForStart(of: running.id)
            let first = try producer.enqueue(JobRequest(type: "echo", input: "first", queue: queue))
            #expect(try tap.waitForResult(first.id).status == .succeeded)
            // The next echo waits for its turn (an hour); a job depending on the sum waits for it.
            let turn = try producer.enqueue(JobRequest(type: "echo", input: "second", queue: queue))
            let dependent = try producer.enqueue(
                JobRequest(type: "echo", input: "after", queue: queue, dependencies: [running.id]))
            let metrics = try await MetricsScrape.fetch(url) { metrics in
                metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingForTurn"]) == 1
                    && metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingForDependencies"]) == 1
            }
            #expect(metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingForTurn"]) == 1)
            #expect(metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingForDependencies"]) == 1)
            #expect(metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingToRunAlone"]) == 0)
            try producer.cancel(jobIDs: [running.id, turn.id, dependent.id])
            let after = try await MetricsScrape.fetch(url) { metrics in
                metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingForTurn"]) == 0
                    && metrics.value("warren_jobs_waiting_in_worker", ["state": "waitingForDependencies"]) == 0
            }
            #expect(after.value("warren_jobs_waiting_in_worker", ["state": "waitingForTurn"]) == 0)
            #expect(after.value("warren_jobs_waiting_in_worker", ["state": "waitingForDependencies"]) == 0)
        }

        @Test(
            "other paths are 404, other methods on /metrics, /livez, /readyz 405; a port in use or a host that is not IPv4 stops the worker"
        )
        func otherRequestsAndAddresses() async throws {
            let queue = TestEnvironment.uniqueName("metrics-other")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--metrics-port", "0"])
            defer { worker.terminate() }
            let url = try worker.metricsURL()
            _ = try await MetricsScrape.fetch(try #require(URL(string: url.absoluteString + "?name=warren_prefetch")))
            for (method, path, status) in [
                ("GET", "/", 404), ("GET", "/metrics/more", 404), ("GET", "/other", 404), ("POST", "/other", 404),
                ("GET", "/livez/more", 404), ("POST", "/metrics", 405), ("PUT", "/readyz", 405),
            ] {
                var request = URLRequest(url: try #require(URL(string: path, relativeTo: url)))
                request.httpMethod = method
                let (_, response) = try await URLSession.shared.data(for: request)
                let http = response as? HTTPURLResponse
                #expect(http?.statusCode == status, "\(method) \(path)")
                if status == 405 { #expect(http?.value(forHTTPHeaderField: "Allow") == "GET, HEAD") }
            }
            var head = URLRequest(url: url)
            head.httpMethod = "HEAD"
            let (empty, headResponse) = try await URLSession.shared.data(for: head)
            #expect((headResponse as? HTTPURLResponse)?.statusCode == 200)
            #expect(empty.isEmpty)
            #expect(
                (headResponse as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain")
                    == true)

            // Idle connections beyond the limit are closed as they open; once they go, scrapes are served again.
            let port = try #require(url.port)
            let held = try (0..<(256 + 8)).map { _ in try RawConnection(port: port) }
            var refused = 0
            let deadline = ContinuousClock.now + .seconds(30)
            while refused < 8, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                refused = held.filter { $0.closedByPeer() }.count
            }
            #expect((8...12).contains(refused), "\(refused) closed")
            held.forEach { $0.close() }
            _ = try await MetricsScrape.fetch(url)

            let brokerURL = try TestEnvironment.brokerURL
            let taken = try CLI.run(["worker", "--url", brokerURL, "--queue", queue, "--metrics-port", "\(port)"])
            #expect(taken.status == 1, "a port in use is no bad argument")
            #expect(
                taken.stderr.contains("cannot serve metrics on 127.0.0.1:\(port): Address already in use"),
                "\(taken.stderr)")
            let named = try CLI.run([
                "worker", "--url", brokerURL, "--queue", queue, "--metrics-port", "0", "--metrics-host", "localhost",
            ])
            #expect(named.status != 0)
            #expect(named.stderr.contains("--metrics-host localhost: not an IPv4 address"), "\(named.stderr)")
        }

        @Test(
            "a request that does not arrive whole soon after its first byte loses its connection; a kept-alive one stays"
        )
        func requestDeadline() async throws {
            let queue = TestEnvironment.uniqueName("metrics-slow")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue, arguments: ["--metrics-port", "0"])
            defer { worker.terminate() }
            let port = try #require(try worker.metricsURL().port)
            let kept = try RawConnection(port: port)
            defer { kept.close() }
            #expect(kept.send("GET /livez HTTP/1.1\r\nHost: warren\r\n\r\n"))
            #expect(kept.received().hasPrefix("HTTP/1.1 200 OK"))

            // A client that sends a header line now and then, never ending its request, keeps the connection only
            // until the request's time is up, although it is never idle.
            let slow = try RawConnection(port: port)
            defer { slow.close() }
            var sending = slow.send("GET /metrics HTTP/1.1\r\nHost: warren\r\n")
            let giveUp = ContinuousClock.now + .seconds(60)
            while sending, !slow.closedByPeer(), ContinuousClock.now < giveUp {
                try await Task.sleep(for: .milliseconds(500))
                sending = slow.send("X-Slow: 1\r\n")
            }
            #expect(!sending || slow.closedByPeer(), "the dripping request kept its connection for 60 s")
            #expect(!kept.closedByPeer(), "a kept-alive connection between requests is no slow request")
            #expect(kept.send("GET /readyz HTTP/1.1\r\nHost: warren\r\n\r\n"))
            #expect(kept.received().hasPrefix("HTTP/1.1 "))
        }

        @Test("the exposition text reader accepts what Prometheus accepts and rejects what it does not")
        func exposition() throws {
            let valid = """
                # HELP warren_jobs_total Jobs by type and outcome.
                # TYPE warren_jobs_total counter
                warren_jobs_total{type="echo",status="succeeded"} 3
                warren_jobs_total{type="say \\"hi\\"\\n",status="failed",} 1 1700000000000
                # TYPE warren_prefetch gauge
                warren_prefetch 10
                # TYPE warren_job_run_seconds histogram
                warren_job_run_seconds_bucket{type="echo",le="0.001"} 2
                warren_job_run_seconds_bucket{type="echo",le="+Inf"} 3
                warren_job_run_seconds_sum{type="echo"} 0.0042
                warren_job_run_seconds_count{type="echo"} 3
                # a comment

                """
            let text = try PrometheusText(valid)
            #expect(text.value("warren_jobs_total", ["type": "echo", "status": "succeeded"]) == 3)
            #expect(text.value("warren_jobs_total", ["type": "say \"hi\"\n", "status": "failed"]) == 1)
            #expect(text.value("warren_job_run_seconds_count", ["type": "echo"]) == 3)
            #expect(try PrometheusText("").samples.isEmpty)

            for invalid in [
                "warren_jobs_total 1",  // no final newline
                "9lives 1\n",
                "warren_jobs_total{type=\"echo} 1\n",
                "warren_jobs_total{type=echo} 1\n",
                "warren_jobs_total{type=\"a\\x\"} 1\n",
                "warren_jobs_total{type=\"a\",type=\"b\"} 1\n",
                "warren_jobs_total one\n",
                "warren_jobs_total 1 soon\n",
                "warren_jobs_total 1\nwarren_jobs_total 2\n",
                "# TYPE warren_jobs_total counter\nwarren_jobs_total -1\n",
                "# TYPE warren_jobs_total counter\n# TYPE warren_jobs_total gauge\n",
                "warren_jobs_total 1\n# TYPE warren_jobs_total counter\n",
                "# TYPE warren_jobs_total countr\n",
                "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n",
                "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
            ] {
                #expect(throws: PrometheusText.Problem.self, "\(invalid)") { try PrometheusText(invalid) }
            }
        }
    }
}

/// A TCP connection to the local host that sends only what it is told.
private final class RawConnection {
    private let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard socket >= 0, connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    /// Sends `text`; `false` once the server closed the connection.
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return Glibc.send(socket, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count
    }

    /// Reads what the server sent so far, waiting at most a few seconds for the first of it.
    func received() -> String {
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 5_000) == 1 else { return "" }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(socket, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
    }

    /// Whether the server closed it: it reads as ended, without waiting.
    func closedByPeer() -> Bool {
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_PEEK)) <= 0
    }

    func close() {
        _ = Glibc.close(socket)
    }
}
