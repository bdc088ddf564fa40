import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct WorkerSettings {
        @Test("a worker takes its settings from a file and the environment, a flag over the environment over the file")
        func settingsReachTheWorker() throws {
            let (first, second) = (TestEnvironment.uniqueName("settings-a"), TestEnvironment.uniqueName("settings-b"))
            defer { [first, second].forEach(BrokerProbe.delete) }
            let id = TestEnvironment.uniqueName("settings-worker")
            let file = try TestEnvironment.temporaryDirectory().appendingPathComponent("worker.env")
            try """
            # every name as in the environment
            WARREN_URL=\(try TestEnvironment.brokerURL)
            WARREN_QUEUE=\(first),\(second)
            WARREN_WIDTH=2
            WARREN_LOCAL_QUEUE="io=5"
            WARREN_PREFETCH=50
            WARREN_WORKER_ID=from-the-file
            WARREN_LOG_LEVEL=debug

            """.write(to: file, atomically: true, encoding: .utf8)
            let environment = [
                "WARREN_CONFIG": file.path, "WARREN_WIDTH": "3", "WARREN_PREFETCH": "40", "WARREN_WORKER_ID": id,
            ]
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary, ["worker", "--prefetch", "9"], environment: environment,
                name: "worker \(id)")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            // The file's log level: the worker logs each job's start at debug.
            let job = try Producer.forTests().enqueue(JobRequest(type: "echo", queue: second))
            try worker.waitForStart(of: job.id)

            let status = try CLI.run(["status", "--url", try TestEnvironment.brokerURL])
            #expect(status.status == 0, "\(status.stderr)")
            let line = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("\(id) host=") })
            #expect(line.contains("queues=\(first),\(second)"), "the file's queues: \(line)")
            #expect(line.contains("prefetch=9"), "the flag beats the environment and the file: \(line)")
            let lines = status.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let index = try #require(lines.firstIndex { $0.hasPrefix("\(id) host=") })
            let locals = lines[(index + 1)...].prefix { $0.hasPrefix("  local ") }
            #expect(locals.contains { $0.hasPrefix("  local default width=3 ") }, "the environment beats the file")
            #expect(locals.contains { $0.hasPrefix("  local io width=5 ") }, "the file's local queue")
        }

        @Test("a bad setting stops the worker with a usage error that names where it came from")
        func badSettings() throws {
            let file = try TestEnvironment.temporaryDirectory().appendingPathComponent("worker.env")
            try "WARREN_WIDTH=2\nWARREN_MAX_MEMROY=1G\n".write(to: file, atomically: true, encoding: .utf8)
            let url = try TestEnvironment.brokerURL
            let typo = try CLI.run(["worker", "--url", url, "--config", file.path])
            #expect(typo.status == 64)
            #expect(
                typo.stderr.contains("--config \(file.path), line 2: WARREN_MAX_MEMROY: no setting of warren worker"),
                "\(typo.stderr)")
            let value = try CLI.run(["worker", "--url", url], environment: ["WARREN_GRACE": "soon"])
            #expect(value.status == 64)
            #expect(
                value.stderr.contains("WARREN_GRACE in the environment: 'soon' is not a valid value for --grace"),
                "\(value.stderr)")
        }
    }
}
