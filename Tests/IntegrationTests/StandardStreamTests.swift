import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    /// The command line as a Unix tool: signals while it enqueues, output it cannot write, descriptors closed at
    /// start, arguments that are not UTF-8, a worker whose log pipe closes.
    @Suite struct StandardStreams {
        @Test(
            "an interrupted producer enqueues none of a call's jobs: their ids are unknown to dependents, their locks free"
        )
        func interruptedProducer() throws {
            let queue = TestEnvironment.uniqueName("interrupted")
            defer { BrokerProbe.delete(queue) }
            let sequences = SequenceStore(
                path: try TestEnvironment.temporaryDirectory().appendingPathComponent("sequence").path)
            let producer = try Producer(url: try TestEnvironment.brokerURL, sequences: sequences)
            defer { producer.close() }
            let key = TestEnvironment.uniqueName("interrupted-key")
            let jobs = [
                JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(60)),
                JobRequest(type: "echo", queue: queue),
            ]
            producer.interruption.interrupt()
            let error = #expect(throws: WarrenError.self) { try producer.enqueue(jobs) }
            #expect(error?.code == .interrupted)
            #expect(error?.enqueuedJobIDs == [])
            #expect(error?.message == "interrupted: none of the 2 jobs was enqueued", "\(String(describing: error))")
            #expect(((try? BrokerProbe.depth(of: queue)) ?? 0) == 0, "not even declared, or empty")

            // The same state directory: the journal took them back, and the lock was released.
            let again = try Producer(url: try TestEnvironment.brokerURL, sequences: sequences)
            defer { again.close() }
            let dependent = #expect(throws: WarrenError.self) {
                try again.enqueue(JobRequest(type: "echo", queue: queue, dependencies: [jobs[1].id]))
            }
            #expect(dependent?.message.contains("unknown") == true, "\(String(describing: dependent))")
            try again.enqueue(JobRequest(type: "echo", key: key, queue: queue, uniqueFor: .seconds(60)))
            #expect(try BrokerProbe.depth(of: queue) == 1)
        }

        @Test("SIGINT while enqueue publishes a graph: exit 130, and the ids printed are the jobs in the queue")
        func interruptedEnqueue() throws {
            let queue = TestEnvironment.uniqueName("interrupted-graph")
            defer { BrokerProbe.delete(queue) }
            let enqueue = try Self.publishingGraph(to: queue, prelude: "")
            defer { enqueue.terminate() }
            enqueue.signal(SIGINT)
            #expect(enqueue.waitForExit() == 130, "\(enqueue.stderr)")
            #expect(enqueue.stderr.contains("warren: interrupted"), "\(enqueue.stderr)")
            let printed = enqueue.stdout.split(separator: "\n")
            #expect(printed.count == Int(try BrokerProbe.depth(of: queue)), "\(enqueue.stderr)")
            #expect(printed.allSatisfy { $0.hasPrefix("j") && $0.split(separator: " ").count == 2 })
        }

        @Test(
            "output that cannot be written fails the command, naming what was lost; a full stderr changes no exit code")
        func unwritableOutput() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("full-output")
            defer { BrokerProbe.delete(queue) }
            let full = try Self.shell(
                #""$0" enqueue echo --input 2 --queue "$1" --url "$2" > /dev/full"#, [queue, url])
            #expect(full.status == 1)
            #expect(
                full.stderr.contains(
                    "warren: cannot write the ids of the 1 enqueued job(s) to standard output (No space left on device)"
                        + "; here, instead:\n"),
                "\(full.stderr)")
            #expect(try BrokerProbe.depth(of: queue) == 1, "the job was enqueued all the same")
            let help = try Self.shell(#""$0" --help > /dev/full"#, [])
            #expect(help.status == 1, "\(help.stderr)")

            let badInput = try Self.shell(#""$0" enqueue echo --input '{bad' --url "$1" 2> /dev/full"#, [url])
            #expect(badInput.status == 64)
            let closedError = try Self.shell(#""$0" enqueue echo --input '{bad' --url "$1" 2>&-"#, [url])
            #expect(closedError.status == 64)
        }

        @Test("standard output closed at start: its output is lost and said so, not sent into the broker's connection")
        func closedOutput() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("closed-output")
            defer { BrokerProbe.delete(queue) }
            let enqueued = try Self.shell(#""$0" enqueue echo --input 3 --queue "$1" --url "$2" >&-"#, [queue, url])
            #expect(enqueued.status == 1, "\(enqueued.stderr)")
            #expect(enqueued.stderr.contains("(Bad file descriptor); here, instead:\n"), "\(enqueued.stderr)")
            #expect(!enqueued.stderr.contains("FRAME_ERROR"), "\(enqueued.stderr)")
            let id = try #require(enqueued.stderr.split(separator: "\n").last.map(String.init))
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            let left = try #require(try connection.get(queue, noAck: true, channel: 1))
            #expect(left.properties.messageID == id, "the id on stderr is the job's")
        }

        @Test("a signal the command was started ignoring (nohup, a shell's background job) stays ignored")
        func inheritedIgnoredSignal() throws {
            let queue = TestEnvironment.uniqueName("ignored-signal")
            defer { BrokerProbe.delete(queue) }
            let enqueue = try Self.publishingGraph(to: queue, prelude: "trap '' HUP;")
            defer { enqueue.terminate() }
            enqueue.signal(SIGHUP)
            #expect(enqueue.waitForExit() == 0, "\(enqueue.stderr)")
            #expect(enqueue.stdout.split(separator: "\n").count == 20_000)
        }

        @Test("an argument, an input file or a graph file that is not UTF-8 is refused (exit 64), not changed")
        func invalidUTF8() throws {
            let url = try TestEnvironment.brokerURL
            let output = try Self.shell(#""$0" enqueue echo --queue "$(printf 'q\377')" --url "$1""#, [url])
            #expect(output.status == 64)
            #expect(output.stderr.contains("Error: argument 4 is not valid UTF-8"), "\(output.stderr)")
            let directory = try TestEnvironment.temporaryDirectory()
            let input = directory.appendingPathComponent("input.json")
            try Data([0x22, 0xFF, 0x22]).write(to: input)
            let graph = directory.appendingPathComponent("graph.json")
            try Data(
                #"{"jobs": [{"name": "a", "type": "echo", "input": "\#u{FF}"}]}"#.utf8.map { $0 == 0xC3 ? 0xFF : $0 }
            )
            .write(to: graph)
            for (arguments, message) in [
                (["enqueue", "echo", "--input", "@" + input.path], "--input @\(input.path): not valid UTF-8"),
                (["enqueue", "--graph", graph.path], "the graph file '\(graph.path)' is not UTF-8 text"),
            ] {
                let refused = try CLI.run(arguments + ["--url", url])
                #expect(refused.status == 64)
                #expect(refused.stderr.contains(message), "\(refused.stderr)")
            }
        }

        @Test("a worker whose log pipe closes works on, and stops as it always does")
        func closedLogPipe() throws {
            let queue = TestEnvironment.uniqueName("closed-log")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let pipe = Pipe()
            let worker = Process()
            worker.executableURL = TestEnvironment.warrenBinary
            worker.arguments = ["worker", "--queue", queue, "--url", url, "--log-level", "debug"]
            worker.standardError = pipe
            worker.standardOutput = pipe
            worker.standardInput = FileHandle.nullDevice
            try worker.run()
            defer { if worker.isRunning { kill(worker.processIdentifier, SIGKILL) } }
            try pipe.fileHandleForReading.close()
            try pipe.fileHandleForWriting.close()
            // Each job logs lines at debug level, into the pipe nobody reads any more.
            let enqueued = try CLI.run(
                ["enqueue", "echo", "--input", "4", "--queue", queue, "--wait", "--timeout", "30", "--url", url])
            #expect(enqueued.status == 0, "\(enqueued.stderr)")
            #expect(worker.isRunning)
            kill(worker.processIdentifier, SIGTERM)
            worker.waitUntilExit()
            #expect(worker.terminationReason == .exit && worker.terminationStatus == 0)
        }

        /// Starts `enqueue` of a graph of 20,000 jobs to `queue` (with `sh -c`, after `prelude`), and returns once the
        /// queue is declared: the command then catches the signals, and no job has left yet.
        static func publishingGraph(to queue: String, prelude: String) throws -> ChildProcess {
            let jobs = (0..<20_000).map { #"{"name": "j\#($0)", "type": "echo", "input": \#($0)}"# }
            let graph = try TestEnvironment.temporaryDirectory().appendingPathComponent("graph.json")
            try Data(#"{"jobs": [\#(jobs.joined(separator: ","))]}"#.utf8).write(to: graph)
            let enqueue = try ChildProcess(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c", prelude + #" exec "$0" enqueue --graph "$1" --queue "$2" --url "$3""#,
                    TestEnvironment.warrenBinary.path, graph.path, queue, try TestEnvironment.brokerURL,
                ],
                name: "enqueue --graph")
            let declared = ContinuousClock.now + .seconds(60)
            while (try? BrokerProbe.depth(of: queue)) == nil, enqueue.process.isRunning, ContinuousClock.now < declared
            {
                Thread.sleep(forTimeInterval: 0.005)
            }
            return enqueue
        }

        /// Runs `script` with `sh -c`, the warren binary as `$0` and `arguments` as `$1`…
        static func shell(_ script: String, _ arguments: [String]) throws -> CLI.Output {
            let child = try ChildProcess(
                URL(fileURLWithPath: "/bin/sh"), ["-c", script, TestEnvironment.warrenBinary.path] + arguments,
                name: "sh -c warren")
            let status = child.waitForExit()
            return CLI.Output(status: status, stdout: child.stdout, stderr: child.stderr)
        }
    }
}
