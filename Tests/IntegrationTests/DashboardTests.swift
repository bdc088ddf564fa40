import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    /// `warren dashboard` against the private broker and a real worker, through HTTP.
    @Suite struct Dashboard {
        @Test("every page renders the fleet's data: queues, workers, jobs with progress, results, a job, dead letters")
        func pagesShowTheFleet() throws {
            let queue = TestEnvironment.uniqueName("dash-pages")
            defer { BrokerProbe.delete(queue) }
            let workerID = TestEnvironment.uniqueName("dash-worker")
            let worker = try CLI.startWorker(queue: queue, id: workerID, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let dashboard = try DashboardProcess(arguments: ["--queue", queue])
            defer { dashboard.stop() }
            let producer = try Producer.forTests()
            defer { producer.close() }
            let slow = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...200), delayMs: 200), key: "dash-key", queue: queue))
            let quick = try producer.enqueue(JobRequest(type: "echo", input: ["hello": "dashboard"], queue: queue))
            let unknown = try producer.enqueue(JobRequest(type: "no-such-type", queue: queue))

            let overview = try dashboard.waitForPage("/") { $0.contains(workerID) && $0.contains(slow.id) }
            #expect(overview.contains("data-queue=\"\(queue)\""))
            #expect(overview.contains("<progress"))
            let jobs = try dashboard.waitForPage("/jobs") { $0.contains(slow.id) && $0.contains("adding") }
            #expect(jobs.contains("dash-key"))
            #expect(jobs.contains("data-state=\"executing\""))
            let results = try dashboard.waitForPage("/results") { $0.contains(quick.id) }
            #expect(results.contains("data-status=\"succeeded\""))
            let filtered = try dashboard.request("/results?status=failed").body
            #expect(!filtered.contains("data-job=\"\(quick.id)\""))
            let job = try dashboard.waitForPage("/job?id=\(quick.id)") { $0.contains("dashboard") }
            #expect(job.contains("Output"))
            let dead = try dashboard.waitForPage("/dead") { $0.contains(unknown.id) }
            #expect(dead.contains("unknownType"))
            let deadJob = try dashboard.request("/job?id=\(unknown.id)").body
            #expect(deadJob.contains("Descriptor") && deadJob.contains("no-such-type"))
            #expect(try dashboard.request("/schedules").status == 200)
            #expect(try dashboard.request("/assets/app.js").body.contains("DOMParser"))
            #expect(try dashboard.request("/live.json").body.contains("\"succeeded\""))
        }

        @Test("cancel, pause, resume, resize and dead-letter buttons change what the pages say")
        func actionsChangeThePages() throws {
            let queue = TestEnvironment.uniqueName("dash-actions")
            defer { BrokerProbe.delete(queue) }
            let workerID = TestEnvironment.uniqueName("dash-worker")
            let worker = try CLI.startWorker(queue: queue, id: workerID)
            defer { worker.terminate() }
            let dashboard = try DashboardProcess(arguments: ["--queue", queue])
            defer { dashboard.stop() }
            let producer = try Producer.forTests()
            defer { producer.close() }
            let slow = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...300), delayMs: 200), queue: queue))
            let page = try dashboard.waitForPage("/jobs") { $0.contains(slow.id) }
            let token = try #require(DashboardProcess.token(in: page))

            // Unconfirmed, an action asks first, and does nothing.
            let asked = try dashboard.request(
                "/actions/cancel", form: [("csrf", token), ("job", slow.id), ("return", "/jobs")])
            #expect(asked.status == 200 && asked.body.contains("Yes, do it"))
            let cancel = try dashboard.request(
                "/actions/cancel", form: [("csrf", token), ("job", slow.id), ("return", "/jobs"), ("confirmed", "yes")])
            #expect(cancel.status == 302)
            #expect(cancel.headers.contains("notice="))
            try dashboard.waitForPage("/results?job=\(slow.id)") { $0.contains("data-status=\"cancelled\"") }

            func post(_ action: String, _ fields: [(String, String)]) throws {
                let reply = try dashboard.request(
                    "/actions/\(action)", form: [("csrf", token), ("confirmed", "yes"), ("return", "/")] + fields)
                #expect(reply.status == 302, "\(action): \(reply.body)")
            }
            try post("pause", [("queue", queue)])
            try dashboard.waitForPage("/") {
                $0.contains("<tr data-queue=\"\(queue)\"><td class=\"mono\">\(queue) <span class=\"tag paused\">")
            }
            try post("resume", [("queue", queue)])
            try dashboard.waitForPage("/") {
                $0.contains("<tr data-queue=\"\(queue)\"><td class=\"mono\">\(queue)</td>")
            }
            try post("resize", [("worker", workerID), ("localQueue", "default"), ("width", "7")])
            try dashboard.waitForPage("/") { $0.contains("width 7,") }
            let refused = try dashboard.request(
                "/actions/resize",
                form: [("csrf", token), ("confirmed", "yes"), ("localQueue", "default"), ("width", "0")])
            #expect(refused.status == 400)

            // A worker paused on every queue says so.
            try post("pause", [("worker", workerID)])
            try dashboard.waitForPage("/") { $0.contains("<span class=\"tag paused\">paused</span></td><td>") }
            try post("resume", [("worker", workerID)])
            try dashboard.waitForPage("/") { !$0.contains("tag paused") }

            // Cancel key: every job of the key so far; cancel all: every job of the queue so far.
            let keyed = try (0..<2).map { _ in
                try producer.enqueue(
                    JobRequest(
                        type: "sum", input: .numbers(Array(1...300), delayMs: 200), key: "dash-cancel", queue: queue))
            }
            try post("cancel", [("key", "dash-cancel")])
            for job in keyed {
                try dashboard.waitForPage("/results?job=\(job.id)") { $0.contains("data-status=\"cancelled\"") }
            }
            let queued = try (0..<3).map { _ in
                try producer.enqueue(
                    JobRequest(type: "sum", input: .numbers(Array(1...300), delayMs: 200), queue: queue))
            }
            try post("cancel-all", [("queue", queue)])
            for job in queued {
                try dashboard.waitForPage("/results?job=\(job.id)") { $0.contains("data-status=\"cancelled\"") }
            }

            let first = try producer.enqueue(JobRequest(type: "no-such-type", queue: queue))
            let second = try producer.enqueue(JobRequest(type: "no-such-type", queue: queue))
            try dashboard.waitForPage("/dead") { $0.contains(first.id) && $0.contains(second.id) }
            try post("dead-delete", [("job", first.id)])
            try dashboard.waitForPage("/dead") { !$0.contains(first.id) && $0.contains(second.id) }
            try post("dead-requeue", [("job", second.id)])
            // The worker takes it again, and dead-letters it again: its letter comes back as a new one.
            let requeued = try dashboard.waitForPage("/results?job=\(second.id)") {
                $0.components(separatedBy: "data-job=\"\(second.id)\"").count > 2
            }
            #expect(requeued.contains("failed"))
        }

        @Test("beyond loopback: refuses to start without a credential, refuses requests without it, never shows it")
        func credentialBeyondLoopback() throws {
            let refused = try CLI.run(["dashboard", "--url", try TestEnvironment.brokerURL, "--host", "0.0.0.0"])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("credential"))

            let secret = "s3cret-\(UUID().uuidString)"
            let dashboard = try DashboardProcess(
                arguments: ["--host", "0.0.0.0"], environment: ["WARREN_DASHBOARD_TOKEN": secret])
            defer { dashboard.stop() }
            let anonymous = try dashboard.request("/")
            #expect(anonymous.status == 401)
            #expect(anonymous.headers.lowercased().contains("www-authenticate: basic"))
            #expect(try dashboard.request("/", user: "someone:wrong").status == 401)
            let page = try dashboard.request("/", user: "someone:\(secret)")
            #expect(page.status == 200)
            // Once the first poll listed queues, the page has forms, each with the page's token.
            let withForms = try dashboard.waitForPage("/", user: "someone:\(secret)") { $0.contains("name=\"csrf\"") }
            #expect(try dashboard.request("/live.json", headers: ["Authorization: Bearer \(secret)"]).status == 200)
            #expect(!page.body.contains(secret))
            #expect(!withForms.contains(secret))
            let token = try #require(DashboardProcess.token(in: withForms))
            // Posts without the page's token, or from another site, are refused even with the credential.
            let forged = try dashboard.request(
                "/actions/pause", form: [("csrf", "0"), ("confirmed", "yes")],
                headers: ["Authorization: Bearer \(secret)"])
            #expect(forged.status == 403)
            let crossSite = try dashboard.request(
                "/actions/pause", form: [("csrf", token), ("confirmed", "yes")],
                headers: [
                    "Authorization: Bearer \(secret)", "Origin: https://evil.example", "Sec-Fetch-Site: cross-site",
                ])
            #expect(crossSite.status == 403)
            #expect(!dashboard.child.stdout.contains(secret) && !dashboard.child.stderr.contains(secret))
        }
    }
}

extension Integration.Dashboard {
    /// Where the browser test writes its screenshot: `.build/test-artifacts/` (kept after `scripts/test` ends).
    static let artifacts = TestEnvironment.packageRoot.appendingPathComponent(".build/test-artifacts")

    @Test("in headless Chromium: a live progress bar moves, cancel ends the job cancelled, a screenshot is written")
    func browser() throws {
        let queue = TestEnvironment.uniqueName("dash-browser")
        defer { BrokerProbe.delete(queue) }
        let worker = try CLI.startWorker(queue: queue, id: TestEnvironment.uniqueName("dash-worker"))
        defer { worker.terminate() }
        let dashboard = try DashboardProcess(arguments: ["--queue", queue])
        defer { dashboard.stop() }
        let producer = try Producer.forTests()
        defer { producer.close() }
        let job = try producer.enqueue(
            JobRequest(type: "sum", input: .numbers(Array(1...300), delayMs: 300), key: "browser", queue: queue),
            watch: true)
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let screenshot = Self.artifacts.appendingPathComponent("dashboard-overview.png")
        try? FileManager.default.removeItem(at: screenshot)
        let script = TestEnvironment.packageRoot.appendingPathComponent(
            "Tests/IntegrationTests/Clients/dashboard_browser.py")
        let browser = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/python3"), [script.path, dashboard.base, job.id, screenshot.path],
            name: "dashboard_browser.py")
        let status = browser.waitForExit(timeout: .seconds(180))
        #expect(status == 0, "stdout:\n\(browser.stdout)\nstderr:\n\(browser.stderr)")
        #expect(browser.stdout.contains("without a reload"))
        #expect(browser.stdout.contains("job \(job.id) cancelled"))
        #expect(FileManager.default.fileExists(atPath: screenshot.path))
        let result = try producer.waitForResult(of: job.id, timeout: .seconds(60))
        #expect(result.status == .cancelled)
    }
}

extension Integration.Dashboard {
    /// Where the measurement with a large fleet is written, for docs/dashboard.md.
    static let timings = artifacts.appendingPathComponent("dashboard-timings.txt")

    @Test("100 workers holding 1,000 jobs each and 100,000 jobs in a queue: every page renders, paged; times written")
    func largeFleet() throws {
        let queue = TestEnvironment.uniqueName("dash-large")
        defer { BrokerProbe.delete(queue) }
        let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
        defer { connection.close() }
        try connection.openChannel(1)
        _ = try connection.declareQueue(queue, durable: false, channel: 1)
        let waiting = 100_000
        for index in 0..<waiting {
            try connection.publish(Array("{\"n\":\(index)}".utf8), exchange: "", routingKey: queue, channel: 1)
        }
        let dashboard = try DashboardProcess(arguments: ["--queue", queue])
        defer { dashboard.stop() }
        try dashboard.waitForPage("/") { $0.contains("Data as of") }
        let fleet = try SyntheticFleet(workers: 100, jobsPerWorker: 1000, queue: queue)
        defer { fleet.stop() }
        try dashboard.waitForPage("/", timeout: .seconds(120)) {
            $0.contains("data-tile=\"workers\">100<") && $0.contains("data-tile=\"held\">100000<")
                && $0.contains("<td class=\"num\">\(waiting)</td>")
        }
        let pages = [
            "/", "/jobs", "/jobs?page=200", "/jobs?worker=synthetic-42", "/jobs?state=waiting&page=100", "/results",
            "/dead", "/schedules", "/live.json",
        ]
        var lines = ["page | slowest of 5 (ms) | bytes"]
        for page in pages {
            var slowest = 0.0
            var bytes = 0
            for _ in 0..<5 {
                let reply = try dashboard.request(page)
                #expect(reply.status == 200, "\(page)")
                slowest = max(slowest, reply.seconds)
                bytes = reply.body.utf8.count
            }
            lines.append("\(page) | \(Int((slowest * 1000).rounded())) | \(bytes)")
        }
        let jobs = try dashboard.request("/jobs").body
        #expect(jobs.contains("10000 jobs listed; workers hold 90000 more than they list"))
        #expect(jobs.contains("Page 1 of 200"))
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        try (lines.joined(separator: "\n") + "\n").write(to: Self.timings, atomically: true, encoding: .utf8)
        print(
            "dashboard with 100 workers and 100,000 waiting jobs (\(Self.timings.path)):\n"
                + lines.joined(separator: "\n"))
    }
}

extension Integration.Dashboard {
    @Test("a broker restart shows as an outage, pages still load with the age of their data, and it recovers alone")
    func brokerRestart() throws {
        let queue = TestEnvironment.uniqueName("dash-restart")
        defer { BrokerProbe.delete(queue) }
        let workerID = TestEnvironment.uniqueName("dash-worker")
        let worker = try CLI.startWorker(queue: queue, id: workerID)
        defer { worker.terminate() }
        let dashboard = try DashboardProcess(arguments: ["--queue", queue])
        defer { dashboard.stop() }
        try dashboard.waitForPage("/") { $0.contains(workerID) }

        try Integration.Chaos.brokerCtl(["stop_app"])
        var restarted = false
        defer { if !restarted { try? Integration.Chaos.brokerCtl(["start_app"]) } }
        let outage = try dashboard.waitForPage("/") { $0.contains("Broker unreachable") }
        #expect(outage.contains(workerID), "the last data stays on the page")
        #expect(outage.contains("old; trying again"))
        for page in ["/jobs", "/results", "/dead", "/schedules"] {
            #expect(try dashboard.request(page).status == 200, "\(page)")
        }
        try Integration.Chaos.brokerCtl(["start_app"])
        restarted = true

        try dashboard.waitForPage("/", timeout: .seconds(120)) {
            !$0.contains("Broker unreachable") && $0.contains(workerID)
        }
        // The results stream is read again too: a job run after the restart shows.
        let job = try Producer.forTests().enqueue(JobRequest(type: "echo", input: ["after": "restart"], queue: queue))
        try dashboard.waitForPage("/results?job=\(job.id)", timeout: .seconds(120)) {
            $0.contains("data-status=\"succeeded\"")
        }
    }
}

extension Integration.Dashboard {
    @Test("a broker that stops answering (SIGSTOP): pages still load and say how old their data is")
    func slowBroker() throws {
        let directory = try #require(TestEnvironment.brokerDirectory, "WARREN_BROKER_DIR is set by scripts/test")
        let pidText = try String(contentsOfFile: directory + "/pid", encoding: .utf8)
        let brokerPID = try #require(Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let dashboard = try DashboardProcess()
        defer { dashboard.stop() }
        try dashboard.waitForPage("/") { $0.contains("Data as of") }
        // The pid file names the process group of the broker's node (scripts/broker stops it the same way).
        kill(-brokerPID, SIGSTOP)
        var resumed = false
        defer { if !resumed { kill(-brokerPID, SIGCONT) } }
        // The poll under way hangs on the broker; pages render what it last learnt, and say how old it is.
        let stale = try dashboard.waitForPage("/") { $0.contains("class=\"stale-data\"") }
        #expect(stale.contains("Data as of"))
        for page in ["/jobs", "/results", "/schedules", "/live.json"] {
            #expect(try dashboard.request(page).status == 200, "\(page)")
        }
        kill(-brokerPID, SIGCONT)
        resumed = true
        try dashboard.waitForPage("/", timeout: .seconds(120)) {
            !$0.contains("class=\"stale-data\"") && !$0.contains("Broker unreachable")
        }
    }
}

extension Integration.Dashboard {
    @Test("the Schedules page lists the file's schedules, their latest result, and the scheduler that leads")
    func schedules() throws {
        let queue = TestEnvironment.uniqueName("dash-schedule")
        defer { BrokerProbe.delete(queue) }
        let name = TestEnvironment.uniqueName("beat")
        let file = try TestEnvironment.temporaryDirectory().appendingPathComponent("schedules.json")
        try """
        {"schedules": [{"name": "\(name)", "every": 1, "type": "echo", "input": "tick", "queue": "\(queue)"}]}
        """.write(to: file, atomically: true, encoding: .utf8)
        let worker = try CLI.startWorker(queue: queue)
        defer { worker.terminate() }
        let scheduler = try ChildProcess(
            TestEnvironment.warrenBinary, ["schedule", file.path, "--url", try TestEnvironment.brokerURL],
            name: "scheduler")
        defer { scheduler.terminate() }
        try scheduler.waitForStderr(containing: "leading the schedules")
        let dashboard = try DashboardProcess(arguments: ["--schedule", file.path])
        defer { dashboard.stop() }
        let page = try dashboard.waitForPage("/schedules") {
            $0.contains("pid \(scheduler.process.processIdentifier)</strong>")
                && $0.contains(
                    "<span class=\"tag succeeded\">succeeded</span> <a class=\"mono\" href=\"/job?id=\(name)%3A")
        }
        #expect(page.contains("data-schedule=\"\(name)\""))
        #expect(page.contains("scheduler run") || page.contains("schedulers run"))
    }
}
