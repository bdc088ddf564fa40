import AMQP
import Foundation
import Testing
import Warren

/// amqp-tools (rabbitmq-c's command-line clients) and Python's pika stand in for any client that is not ours: with
/// only the wire format document, they publish a job, cancel one and read results, live and stored.
extension Integration {
    @Suite struct ForeignClients {
        static func tool(_ name: String) -> URL { URL(fileURLWithPath: "/usr/bin/\(name)") }

        /// Starts `amqp-consume` printing the first result of `jobID`, and waits until its queue is bound.
        static func consumeResult(of jobID: String) throws -> (ChildProcess, String) {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("foreign-reply")
            let consumer = try ChildProcess(
                tool("amqp-consume"),
                ["--url", url, "-q", queue, "-e", Topology.resultsExchange, "-r", jobID, "-c", "1", "cat"])
            waitForConsumer(of: queue)
            return (consumer, queue)
        }

        /// Waits up to 30 s until `queue` has a consumer. A queue not declared yet reads as none (the passive
        /// declare fails with 404), and so does another connection's exclusive queue (405).
        static func waitForConsumer(of queue: String) {
            let deadline = ContinuousClock.now + .seconds(30)
            while ((try? BrokerProbe.consumers(of: queue)) ?? 0) == 0 && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }

        @Test("the wire format's pika example runs as written, also where a --quorum-queues worker made warren.dead")
        func documentedPythonExample() throws {
            let (vhost, url) = try Chaos.addVirtualHost("example")
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                [
                    "worker", "--url", url, "--quorum-queues", "--worker-id",
                    TestEnvironment.uniqueName("example-worker"),
                ],
                name: "worker making quorum queues")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            let script = TestEnvironment.packageRoot.appendingPathComponent(
                "Tests/IntegrationTests/Clients/pika_example.py")
            let client = try ChildProcess(URL(fileURLWithPath: "/usr/bin/python3"), [script.path, url])
            #expect(client.waitForExit() == 0, "\(client.stderr)")
            let lines = client.stdout.split(separator: "\n")
            #expect(lines.contains { $0.contains(" cancelled ") }, "\(client.stdout)")
            #expect(lines.filter { $0.contains(" succeeded ") }.count == 2, "\(client.stdout)")
            let stored = lines.first { $0.hasPrefix("stored results of these jobs: ") }
            #expect((stored.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0) >= 3, "\(client.stdout)")
        }

        @Test("the wire format's amqp-tools example runs as written: reply queue, binding, dependency, cancel, status")
        func documentedShellExample() throws {
            let queue = TestEnvironment.uniqueName("amqp-tools")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let script = TestEnvironment.packageRoot.appendingPathComponent(
                "Tests/IntegrationTests/Clients/amqp_tools_example.sh")
            let client = try ChildProcess(
                URL(fileURLWithPath: "/bin/bash"), [script.path, try TestEnvironment.brokerURL, queue])
            #expect(client.waitForExit() == 0, "\(client.stderr)")
            var received: [String: [[String: Any]]] = [:]
            for line in client.stdout.split(separator: "\n") {
                let (name, json) = (line.prefix { $0 != " " }, line.drop { $0 != " " }.dropFirst())
                let object = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(line)")
                received[String(name), default: []].append(object)
            }
            func only(_ name: String) throws -> [String: Any] {
                try #require(received[name]?.count == 1 ? received[name]?.first : nil, "\(client.stdout)")
            }
            #expect(try only("echo")["output"] as? [String: String] == ["hello": "warren"])
            #expect((try only("sum")["output"] as? [String: Any])?["sum"] as? Int == 6)
            #expect(try only("dependent")["status"] as? String == "succeeded")
            #expect((try only("cancelled")["cancellation"] as? [String: Any])?["reason"] as? String == "requested")
            let statuses = received["status"] ?? []
            #expect(statuses.contains { ($0["queues"] as? [String])?.contains(queue) == true }, "\(client.stdout)")
        }

        @Test(
            "pika publishes a job a Warren worker runs, receives its progress and result in its reply queue, finds it in a stored result batch, and has a dependent job add its sum"
        )
        func pikaClient() throws {
            let queue = TestEnvironment.uniqueName("pika")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let script = TestEnvironment.packageRoot.appendingPathComponent(
                "Tests/IntegrationTests/Clients/pika_client.py")
            // Debian's python3, where python3-pika (scripts/install-deps) lives.
            let client = try ChildProcess(
                URL(fileURLWithPath: "/usr/bin/python3"), [script.path, try TestEnvironment.brokerURL, queue])
            #expect(client.waitForExit() == 0, "\(client.stderr)")
            let lines = try client.stdout.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            try #require(lines.count == 3, "\(client.stdout)\n\(client.stderr)")
            let result = try #require(lines[0]["result"] as? [String: Any])
            let id = try #require(result["jobId"] as? String)
            #expect(result["status"] as? String == "succeeded")
            #expect((result["output"] as? [String: Any])?["sum"] as? Int == 6)
            #expect(result["sequence"] as? Int == 42 && result["key"] as? String == "pika-totals")
            #expect(lines[0]["correlationId"] as? String == id)
            #expect(lines[0]["type"] as? String == "warren.result.succeeded")
            #expect((lines[0]["progress"] as? Int ?? 0) > 0, "progress reports reach the reply queue")
            let stored = try #require(lines[1]["stored"] as? [String: Any])
            #expect(stored["jobId"] as? String == id && stored["status"] as? String == "succeeded")
            #expect(lines[1]["type"] as? String == ResultBatch.messageType)
            #expect(lines[1]["offset"] is Int)
            let dependent = try #require(lines[2]["dependent"] as? [String: Any])
            #expect(dependent["status"] as? String == "succeeded")
            #expect((dependent["output"] as? [String: Any])?["sum"] as? Int == 16)
        }

        @Test("amqp-publish sends a job a Warren worker runs; amqp-consume reads its result")
        func foreignJobAndResult() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("foreign")
            defer { BrokerProbe.delete(queue) }
            let id = UUID().uuidString.lowercased()
            let (consumer, replyQueue) = try Self.consumeResult(of: id)
            defer {
                consumer.terminate()
                BrokerProbe.delete(replyQueue)
            }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let body =
                #"{"version":1,"id":"\#(id)","type":"sum","input":{"numbers":[4,5,6]},"priority":"high","sequence":7,"key":"k"}"#
            let publish = try ChildProcess(
                Self.tool("amqp-publish"), ["--url", url, "-r", queue, "-p", "-C", "application/json", "-b", body])
            #expect(publish.waitForExit() == 0, "\(publish.stderr)")
            #expect(consumer.waitForExit() == 0)
            let result = try #require(
                try JSONSerialization.jsonObject(with: Data(consumer.stdout.utf8)) as? [String: Any])
            #expect(result["version"] as? Int == 1)
            #expect(result["jobId"] as? String == id)
            #expect(result["status"] as? String == "succeeded")
            #expect(result["sequence"] as? Int == 7)
            #expect(result["key"] as? String == "k")
            #expect((result["output"] as? [String: Any])?["sum"] as? Int == 15)
            #expect(result["workerId"] is String)
        }

        @Test("amqp-publish -t names a reply queue; amqp-consume reads the job's result there, 64-bit ids exact")
        func foreignReplyQueue() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("foreign-reply-to")
            defer { BrokerProbe.delete(queue) }
            let replyQueue = TestEnvironment.uniqueName("foreign-replies")
            // Declared here rather than with amqp-consume -x, whose exclusive queue the probe below could not see.
            let setup = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            try setup.openChannel(1)
            _ = try setup.declareQueue(replyQueue, durable: false, exclusive: false, autoDelete: false, channel: 1)
            setup.close()
            let consumer = try ChildProcess(
                Self.tool("amqp-consume"), ["--url", url, "-q", replyQueue, "-c", "1", "cat"])
            defer {
                consumer.terminate()
                BrokerProbe.delete(replyQueue)
            }
            Self.waitForConsumer(of: replyQueue)
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let id = UUID().uuidString.lowercased()
            // With a 64-bit id in the input, past 2^53: it must come back digit for digit.
            let input = #"{"via":"reply_to","id":9007199254740993}"#
            let body = #"{"version":1,"id":"\#(id)","type":"echo","input":\#(input),"sequence":9}"#
            let publish = try ChildProcess(
                Self.tool("amqp-publish"),
                ["--url", url, "-r", queue, "-p", "-C", "application/json", "-t", replyQueue, "-b", body])
            #expect(publish.waitForExit() == 0, "\(publish.stderr)")
            #expect(consumer.waitForExit() == 0)
            let result = try #require(
                try JSONSerialization.jsonObject(with: Data(consumer.stdout.utf8)) as? [String: Any])
            #expect(result["jobId"] as? String == id)
            #expect(result["status"] as? String == "succeeded")
            let output = try #require(result["output"] as? [String: Any])
            #expect(output["via"] as? String == "reply_to")
            #expect(consumer.stdout.contains(#""id":9007199254740993"#), "\(consumer.stdout)")
        }

        @Test("amqp-publish of a cancel message to warren.control cancels a job still in the broker")
        func foreignCancel() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("foreign-cancel")
            defer { BrokerProbe.delete(queue) }
            let job = try Producer.forTests().enqueue(JobRequest(type: "echo", input: "never", queue: queue))
            let (consumer, replyQueue) = try Self.consumeResult(of: job.id)
            defer {
                consumer.terminate()
                BrokerProbe.delete(replyQueue)
            }
            let cancel = #"{"version":1,"kind":"cancel","jobIds":["\#(job.id)"]}"#
            let publish = try ChildProcess(
                Self.tool("amqp-publish"),
                ["--url", url, "-e", Topology.controlExchange, "-r", "", "-p", "-C", "application/json", "-b", cancel])
            #expect(publish.waitForExit() == 0, "\(publish.stderr)")
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            #expect(consumer.waitForExit() == 0)
            let result = try #require(
                try JSONSerialization.jsonObject(with: Data(consumer.stdout.utf8)) as? [String: Any])
            #expect(result["status"] as? String == "cancelled")
            #expect((result["cancellation"] as? [String: Any])?["reason"] as? String == "requested")
        }

        @Test("amqp-get reads a job Warren's CLI published, in the documented format")
        func foreignConsumerOfOurJob() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("foreign-read")
            defer { BrokerProbe.delete(queue) }
            let enqueue = try CLI.run([
                "enqueue", "sum", "--url", url, "--queue", queue, "--priority", "veryHigh", "--key", "totals",
                "--input", #"{"numbers":[1,2]}"#,
            ])
            #expect(enqueue.status == 0, "\(enqueue.stderr)")
            let id = enqueue.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let get = try ChildProcess(Self.tool("amqp-get"), ["--url", url, "-q", queue])
            #expect(get.waitForExit() == 0, "\(get.stderr)")
            let job = try #require(try JSONSerialization.jsonObject(with: Data(get.stdout.utf8)) as? [String: Any])
            #expect(job["version"] as? Int == 1)
            #expect(job["id"] as? String == id)
            #expect(job["type"] as? String == "sum")
            #expect(job["priority"] as? String == "veryHigh")
            #expect(job["key"] as? String == "totals")
            #expect((job["sequence"] as? Int ?? 0) > 0)
            #expect((job["input"] as? [String: Any])?["numbers"] as? [Int] == [1, 2])
        }
    }
}
