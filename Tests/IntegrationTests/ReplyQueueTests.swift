import AMQP
import Foundation
import Testing
import Warren

/// Jobs that name a reply queue (the AMQP `reply_to` property, wire format §3.3): their results and progress
/// reports go to it through the default exchange instead of through `warren.results`, and the name travels with
/// the job through retries and dead letters.
extension Integration {
    @Suite struct ReplyQueues {
        @Test("a job's result and progress reports go to its reply queue, and its result not through warren.results")
        func resultAndProgress() throws {
            let queue = TestEnvironment.uniqueName("reply")
            defer { BrokerProbe.delete(queue) }
            let exchangeTap = try MessageTap.results()
            let reply = try MessageTap.replyQueue()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1"])
            defer { worker.terminate() }
            let id = UUID().uuidString.lowercased()
            let progressTap = try MessageTap(exchange: Topology.progressExchange, routingKey: id)
            let producer = try Producer.forTests()
            try producer.enqueue(
                JobRequest(type: "sum", input: .numbers([1, 2, 3]), queue: queue, replyTo: reply.queue, id: id))

            let result = try reply.waitForResult(id)
            #expect(result.status == .succeeded && result.output?["sum"] == 6)
            let resultIndex = try #require(
                reply.messages.firstIndex { $0.properties.type == "warren.result.succeeded" })
            let resultMessage = reply.messages[resultIndex]
            #expect(resultMessage.exchange == "" && resultMessage.routingKey == reply.queue)
            #expect(resultMessage.properties.correlationID == id)
            let progress = reply.messages[..<resultIndex].filter { $0.properties.type == ProgressMessage.messageType }
            #expect(!progress.isEmpty, "the progress reports reach the reply queue before the result")
            #expect(
                progress.allSatisfy {
                    $0.properties.correlationID == id && (try? ProgressMessage.decode($0.body))?.jobID == id
                })
            try progressTap.read(timeout: .seconds(30)) { !$0.isEmpty }
            #expect(!progressTap.messages.isEmpty, "progress reports still go to warren.progress too")

            // The worker publishes in order on one channel: once the next job's result came through the exchange,
            // a copy of the first one would have come before it.
            let next = try producer.enqueue(JobRequest(type: "echo", input: "next", queue: queue))
            _ = try exchangeTap.waitForResult(next.id)
            #expect(exchangeTap.results(for: id).isEmpty)
        }

        @Test("a retried job that ends dead-lettered still answers its reply queue, and its dead letter keeps the name")
        func retriesAndDeadLetters() throws {
            let queue = TestEnvironment.uniqueName("reply-retry")
            defer { BrokerProbe.delete(queue) }
            let reply = try MessageTap.replyQueue()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try Producer.forTests().enqueue(
                JobRequest(
                    type: "fail", input: ["retryable": true, "code": "flaky"], queue: queue, maxAttempts: 2,
                    replyTo: reply.queue))
            let result = try reply.waitForResult(job.id)
            #expect(result.status == .failed && result.error?.code == "flaky" && result.attempt == 2)
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == job.id } }
            let letter = try #require(dead.messages.first { $0.properties.messageID == job.id })
            #expect(letter.properties.replyTo == reply.queue)
        }

        @Test(
            "the producer refuses a reply queue on a watched job, one of 0 or over 255 bytes, one that does not exist")
        func producerRefusals() throws {
            let producer = try Producer.forTests()
            let missing = TestEnvironment.uniqueName("no-such-reply-queue")
            for (request, watch) in [
                (JobRequest(type: "echo", replyTo: "mine"), true),
                (JobRequest(type: "echo", replyTo: ""), false),
                (JobRequest(type: "echo", replyTo: String(repeating: "q", count: 256)), false),
                (JobRequest(type: "echo", replyTo: missing), false),
            ] {
                let error = #expect(throws: WarrenError.self) { try producer.enqueue(request, watch: watch) }
                #expect(error?.code == .invalidConfiguration, "\(error?.message ?? "")")
            }
            // The look did not declare it, and the producer goes on.
            #expect(throws: AMQPError.self) { try BrokerProbe.depth(of: missing) }
            let reply = try MessageTap.replyQueue()
            #expect(throws: Never.self) { try producer.enqueue(JobRequest(type: "echo", replyTo: reply.queue)) }
        }

        @Test("warren enqueue --reply-to sends the result to the named queue")
        func cliReplyTo() throws {
            let queue = TestEnvironment.uniqueName("reply-cli")
            defer { BrokerProbe.delete(queue) }
            let reply = try MessageTap.replyQueue()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let output = try CLI.run([
                "enqueue", "echo", "--input", #""hello""#, "--queue", queue, "--reply-to", reply.queue,
                "--url", try TestEnvironment.brokerURL,
            ])
            #expect(output.status == 0, "\(output.stderr)")
            let id = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let result = try reply.waitForResult(id)
            #expect(result.status == .succeeded && result.output == "hello")
        }

        @Test("a reply queue that refuses every result: the job runs once and is dead-lettered with resultRefused")
        func refusedResult() throws {
            let queue = TestEnvironment.uniqueName("reply-refused")
            let full = TestEnvironment.uniqueName("reply-full")
            defer { BrokerProbe.delete(queue) }
            defer { BrokerProbe.delete(full) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            _ = try connection.declareQueue(
                full, durable: false, arguments: ["x-max-length": .int(0), "x-overflow": "reject-publish"], channel: 1)
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try Producer.forTests().enqueue(
                JobRequest(type: "echo", input: "refused", queue: queue, replyTo: full))
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == job.id } }
            let letter = try #require(dead.messages.first { $0.properties.messageID == job.id })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "resultRefused")
            let message = letter.properties.headers?[Topology.deadMessageHeader]?.stringValue ?? ""
            #expect(message.contains("reply queue '\(full)'"), "\(message)")
            try dead.settle()
            #expect(dead.messages.filter { $0.properties.messageID == job.id }.count == 1)
            let starts = worker.stderr.split(separator: "\n").filter {
                $0.contains("job=\(job.id)") && $0.hasSuffix("job started")
            }
            #expect(starts.count == 1, "the job ran once, not again and again")
            #expect(try BrokerProbe.depth(of: queue) == 0)
            #expect(worker.process.isRunning)
        }
    }
}
