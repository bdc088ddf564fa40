import Foundation
import Testing
import Warren

/// Builds `Examples/TextWorker` and runs its own tests, which need no broker; then runs its `text-worker` as a
/// separate process against the test broker, and checks that a user's own operation types run, that the demo types
/// are not there, and that SIGTERM stops the worker cleanly through its `ServiceGroup`.
extension Integration {
    @Suite("Example package")
    struct ExamplePackageTests {
        @Test(
            "Examples/TextWorker builds, passes its tests, runs its own operation types and exits 0 on SIGTERM",
            .timeLimit(.minutes(20)))
        func textWorker() async throws {
            let url = try #require(
                ProcessInfo.processInfo.environment["WARREN_TEST_URL"],
                "WARREN_TEST_URL is not set: run the integration tests with scripts/test, which starts a private broker"
            )
            let root = Self.repositoryRoot
            let logs = FileManager.default.temporaryDirectory.appending(path: "warren-example-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: logs) }

            // The first build of the example compiles the root package again into the example's own .build.
            let build = try await Self.runToEnd(
                "/usr/bin/env", ["swift", "build", "--build-tests", "--package-path", "Examples/TextWorker"], in: root,
                log: logs.appending(path: "build.log"))
            try #require(
                build.status == 0, "swift build of Examples/TextWorker exited \(build.status):\n\(build.output)")
            // Its own tests run without a broker: WarrenTesting runs the jobs in memory.
            let tests = try await Self.runToEnd(
                "/usr/bin/env", ["swift", "test", "--skip-build", "--package-path", "Examples/TextWorker"], in: root,
                log: logs.appending(path: "test.log"), environment: ["WARREN_TEST_URL": nil, "WARREN_URL": nil])
            #expect(tests.status == 0, "the tests of Examples/TextWorker exited \(tests.status):\n\(tests.output)")

            let queue = "test.example.\(UUID().uuidString.lowercased())"
            let workerID = "example-\(UUID().uuidString.lowercased())"
            let workerLog = logs.appending(path: "worker.log")
            let worker = try Self.start(
                root.appending(path: "Examples/TextWorker/.build/debug/text-worker"),
                ["--url", url, "--queue", queue, "--cpu-width", "2", "--worker-id", workerID],
                in: root, log: workerLog)
            defer { if worker.process.isRunning { worker.process.terminate() } }

            let requests: [String: JobRequest] = [
                "wordcount": JobRequest(type: "wordcount", input: .object(["text": .string("a b\nc")]), queue: queue),
                "shout": JobRequest(
                    type: "shout", input: .object(["text": .string("hello, warren"), "delayMs": .number(50)]),
                    queue: queue),
                "invalid email": JobRequest(
                    type: "validate-email", input: .object(["email": .string("nobody")]), queue: queue),
                "valid email": JobRequest(
                    type: "validate-email", input: .object(["email": .string("somebody@example.com")]), queue: queue),
                "demo sum": JobRequest(
                    type: "sum", input: .object(["numbers": .array([.number(1), .number(2), .number(3)])]), queue: queue
                ),
            ]
            // A producer is confined to the thread that made it; the jobs wait in the broker until the worker is up.
            let results = try await Self.onOwnThread { () throws -> [String: JobResult] in
                let producer = try Producer(url: url)
                defer { producer.close() }
                let jobs = try requests.mapValues { try producer.enqueue($0, watch: true) }
                return try jobs.mapValues { try producer.waitForResult(of: $0.id, timeout: .seconds(60)) }
            }
            let context = Comment(rawValue: "worker log:\n\(Self.contents(of: workerLog))")

            let wordcount = try #require(results["wordcount"], context)
            #expect(wordcount.status == .succeeded, context)
            #expect(wordcount.workerID == workerID)
            #expect(wordcount.output == .object(["words": .number(3), "lines": .number(2), "characters": .number(5)]))

            let shout = try #require(results["shout"], context)
            #expect(shout.status == .succeeded, context)
            #expect(shout.output == .object(["text": .string("HELLO, WARREN")]))

            let invalid = try #require(results["invalid email"], context)
            #expect(invalid.status == .failed)
            #expect(invalid.error?.code == "invalidEmail", context)
            #expect(invalid.output == nil)

            let valid = try #require(results["valid email"], context)
            #expect(valid.status == .succeeded, context)
            #expect(valid.output == .object(["local": .string("somebody"), "domain": .string("example.com")]))

            // A worker of one's own runs the demo types only when it registers them.
            let sum = try #require(results["demo sum"], context)
            #expect(sum.status == .failed, context)
            #expect(sum.error?.code == "unknownType", context)

            worker.process.terminate()  // SIGTERM
            let exit = try await Self.exitStatus(of: worker, within: .seconds(60))
            #expect(exit == .exited(0), "worker log:\n\(Self.contents(of: workerLog))")
        }

        // MARK: - Helpers

        /// How a child process ended.
        private enum Exit: Equatable {
            case exited(Int32)
            case signalled(Int32)
            case stillRunning
        }

        /// A started child process and the stream that yields once, when it ends.
        private struct Child {
            let process: Process
            let ended: AsyncStream<Exit>
        }

        /// The repository root: three levels above this file (`Tests/IntegrationTests/ExamplePackageTests.swift`).
        private static var repositoryRoot: URL {
            URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        }

        /// Starts `executable` with its standard output and error going to `log`; a file rather than a pipe, so a chatty
        /// child never blocks on a full pipe that nobody reads.
        private static func start(
            _ executable: URL, _ arguments: [String], in directory: URL, log: URL, environment: [String: String?] = [:]
        ) throws -> Child {
            try Data().write(to: log)
            let output = try FileHandle(forWritingTo: log)
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.currentDirectoryURL = directory
            if !environment.isEmpty {
                var merged = ProcessInfo.processInfo.environment
                for (name, value) in environment { merged[name] = value }
                process.environment = merged
            }
            process.standardOutput = output
            process.standardError = output
            process.standardInput = FileHandle.nullDevice
            let (ended, continuation) = AsyncStream.makeStream(of: Exit.self)
            process.terminationHandler = { process in
                continuation.yield(
                    process.terminationReason == .exit
                        ? .exited(process.terminationStatus) : .signalled(process.terminationStatus))
                continuation.finish()
                try? output.close()
            }
            try process.run()
            return Child(process: process, ended: ended)
        }

        /// Runs a command to its end and returns its exit status and the last 4 KB of its output.
        private static func runToEnd(
            _ executable: String, _ arguments: [String], in directory: URL, log: URL,
            environment: [String: String?] = [:]
        ) async throws -> (status: Int32, output: String) {
            let child = try start(
                URL(filePath: executable), arguments, in: directory, log: log, environment: environment)
            var status: Int32 = -1
            for await exit in child.ended {
                if case .exited(let code) = exit { status = code }
            }
            return (status, String(contents(of: log).suffix(4096)))
        }

        /// Waits for `child` to end, at most `timeout`.
        private static func exitStatus(of child: Child, within timeout: Duration) async throws -> Exit {
            let ended = child.ended
            return try await withThrowingTaskGroup(of: Exit.self) { group in
                group.addTask {
                    var exit = Exit.stillRunning
                    for await ending in ended { exit = ending }
                    return exit
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return .stillRunning
                }
                let first = try await group.next() ?? .stillRunning
                group.cancelAll()
                return first
            }
        }

        /// Runs blocking code on a thread of its own rather than on one of the few threads of the cooperative pool.
        private static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Result { try body() }) }.start()
            }
        }

        private static func contents(of file: URL) -> String {
            (try? String(contentsOf: file, encoding: .utf8)) ?? "(no output)"
        }
    }
}
