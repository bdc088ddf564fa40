import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct BadInput {
        struct Case: Sendable, CustomTestStringConvertible {
            let name: String
            let body: [UInt8]
            var contentType: String? = "application/json"
            let code: String
            let detail: String
            var testDescription: String { name }
        }

        static func descriptor(_ fields: String) -> [UInt8] {
            Array("{\"version\":1,\"id\":\"ID\",\(fields)}".utf8)
        }

        static let cases: [Case] = [
            Case(
                name: "malformed JSON", body: Array("{\"version\":1,\"id\":".utf8), code: "malformedMessage",
                detail: "not valid JSON"),
            Case(
                name: "JSON that is not an object", body: Array("[1,2,3]".utf8), code: "invalidDescriptor",
                detail: "not an object"),
            Case(
                name: "missing type", body: descriptor("\"input\":null"), code: "invalidDescriptor",
                detail: "missing key 'type'"),
            Case(
                name: "unknown type", body: descriptor("\"type\":\"frobnicate\""), code: "unknownType",
                detail: "unknown operation type 'frobnicate'"),
            Case(
                name: "input that does not decode",
                body: descriptor("\"type\":\"sum\",\"input\":{\"numbers\":[1,\"two\"]}"), code: "invalidInput",
                detail: "numbers[1]"),
            Case(
                name: "unsupported version", body: Array("{\"version\":2,\"id\":\"ID\",\"type\":\"echo\"}".utf8),
                code: "unsupportedVersion", detail: "version 2"),
            Case(
                name: "wrong content type", body: descriptor("\"type\":\"echo\""), contentType: "text/plain",
                code: "unsupportedContentType", detail: "text/plain"),
            Case(
                name: "a job id that cannot be a routing key",
                body: Array("{\"version\":1,\"id\":\"\(String(repeating: "x", count: 300))\",\"type\":\"echo\"}".utf8),
                code: "invalidDescriptor", detail: "job id must be"),
            Case(
                name: "oversized message",
                body: descriptor("\"type\":\"echo\",\"input\":\"\(String(repeating: "x", count: 5000))\""),
                code: "oversized", detail: "exceeds the limit of 4096 bytes"),
        ]

        @Test(
            "bad input ends failed with a precise reason, is dead-lettered with the reason, and the worker keeps running",
            arguments: cases)
        func badInput(_ badCase: Case) throws {
            let queue = TestEnvironment.uniqueName("bad")
            defer { BrokerProbe.delete(queue) }
            let results = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-message-bytes", "4096"])
            defer { worker.terminate() }
            let id = UUID().uuidString.lowercased()
            let body = Array(
                String(decoding: badCase.body, as: UTF8.self).replacingOccurrences(of: "\"ID\"", with: "\"\(id)\"").utf8
            )
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            // The producer's own headers, of every AMQP type, pass through to the dead letter unchanged.
            let headers: AMQPTable = [
                "x-trace": "t-1", "x-count": .int(-7), "x-ratio": .double(0.25),
                "x-price": .decimal(decimals: 2, value: 1999),
                "x-at": .timestamp(1_700_000_000), "x-flag": .bool(true), "x-raw": .bytes([0, 255]),
                "x-nested": .table(["deeper": .array([.int(1), .decimal(decimals: 1, value: 5)])]),
            ]
            try connection.publish(
                body, exchange: "", routingKey: queue,
                properties: MessageProperties(
                    contentType: badCase.contentType, headers: headers, persistent: true, expiration: "600000",
                    messageID: id),
                channel: 1)

            let result = try results.waitForResult(id)
            #expect(result.status == .failed)
            #expect(result.error?.code == badCase.code)
            #expect(result.error?.message.contains(badCase.detail) == true, "\(result.error?.message ?? "no error")")

            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == id } }
            let letter = try #require(dead.messages.first { $0.properties.messageID == id })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == badCase.code)
            #expect(letter.properties.headers?[Topology.deadQueueHeader]?.stringValue == queue)
            #expect(letter.body == body, "the dead letter keeps the original body")
            #expect(
                letter.properties.expiration == nil, "the job's time-to-live would drop its letter from warren.dead")
            for (name, value) in headers {
                #expect(letter.properties.headers?[name] == value, "\(name)")
            }

            let good = try Producer.forTests().enqueue(JobRequest(type: "echo", input: "still here", queue: queue))
            #expect(try results.waitForResult(good.id).status == .succeeded)
            #expect(try BrokerProbe.depth(of: queue) == 0)
        }

        @Test(
            "a stream given as a job queue is not consumed, with an error; a job that only says it came from one runs")
        func streamAsJobQueue() throws {
            let url = try TestEnvironment.brokerURL
            let stream = TestEnvironment.uniqueName("stream-jobs")
            let classic = TestEnvironment.uniqueName("forged-offset")
            defer {
                BrokerProbe.delete(stream)
                BrokerProbe.delete(classic)
            }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            try connection.declareQueue(stream, arguments: ["x-queue-type": "stream"], channel: 1)
            let results = try MessageTap.results()
            let worker = try CLI.startWorker(queue: stream, arguments: ["--queue", classic])
            defer { worker.terminate() }
            let inStream = UUID().uuidString.lowercased()
            try connection.publish(
                Array(#"{"version":1,"id":"\#(inStream)","type":"echo"}"#.utf8), exchange: "", routingKey: stream,
                properties: MessageProperties(contentType: "application/json", persistent: true), channel: 1)
            try worker.waitForStderr(containing: "not consuming this queue: it is a stream")
            #expect(try BrokerProbe.consumers(of: stream) == 0)
            // A job on a classic queue whose producer set the header runs, with a warning.
            let forged = UUID().uuidString.lowercased()
            try connection.publish(
                Array(#"{"version":1,"id":"\#(forged)","type":"echo"}"#.utf8), exchange: "", routingKey: classic,
                properties: MessageProperties(
                    contentType: "application/json", headers: [Topology.streamOffsetHeader: .int(7)], persistent: true),
                channel: 1)
            #expect(try results.waitForResult(forged).status == .succeeded)
            #expect(worker.stderr.contains("carry an x-stream-offset header"), "\(worker.stderr)")
            try results.settle()
            #expect(results.results(for: inStream).isEmpty, "a job of the stream ran")
            #expect(worker.process.isRunning)
            // Warren's producer does not send jobs there.
            let enqueue = try CLI.run(["enqueue", "echo", "--queue", stream, "--url", url])
            #expect(enqueue.status == 64, "\(enqueue.stderr)")
            #expect(enqueue.stderr.contains("queue '\(stream)' is a stream"), "\(enqueue.stderr)")
        }

        @Test(
            "dead letters of unreadable descriptors go by the id of their failed result; what they name prints escaped")
        func unreadableDeadLetters() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("unreadable")
            defer { BrokerProbe.delete(queue) }
            let results = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--max-message-bytes", "4096"])
            defer { worker.terminate() }
            let tag = UUID().uuidString.lowercased()
            let (twice, huge, forged) = ("\(tag)-first", "\(tag)-huge", "\(tag)-forged")
            let bodies = [
                // The first of two ids, as a readable descriptor's would be.
                #"{"version":1,"id":"\#(twice)","id":"\#(tag)-second","type":"echo","priority":"urgent"}"#,
                #"{"version":1,"id":"\#(huge)","type":"echo","input":1e400,"key":"k","sequence":42}"#,
                #"{"version":1,"id":"\#(forged)","type":"no\nFORGED-LINE \u001b[31m"}"#,
            ]
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            for body in bodies {
                try connection.publish(
                    Array(body.utf8), exchange: "", routingKey: queue,
                    properties: MessageProperties(contentType: "application/json", persistent: true), channel: 1)
            }
            #expect(try results.waitForResult(twice).error?.code == "invalidDescriptor")
            let number = try results.waitForResult(huge)
            #expect(number.error?.code == "invalidDescriptor")
            #expect(number.error?.message.contains("a double cannot hold") == true)
            #expect(number.type == "echo" && number.key == "k" && number.sequence == 42, "read from the body")
            #expect(try results.waitForResult(forged).error?.code == "unknownType")
            #expect(results.results(for: "\(tag)-second").isEmpty)
            // An oversized body is never read: its id is its message_id, its type the AMQP type. Another body's type
            // is the body's, as in its failed result.
            let (oversized, versionless) = ("\(tag)-big", "\(tag)-versionless")
            let big =
                #"{"version":1,"id":"\#(tag)-inside","type":"echo","input":"\#(String(repeating: "x", count: 5000))"}"#
            for (body, messageID) in [(big, oversized), (#"{"id":"\#(versionless)","type":"echo"}"#, nil)] {
                try connection.publish(
                    Array(body.utf8), exchange: "", routingKey: queue,
                    properties: MessageProperties(
                        contentType: "application/json", persistent: true, messageID: messageID, type: "amqp-type"),
                    channel: 1)
            }
            #expect(try results.waitForResult(oversized).type == "amqp-type")
            #expect(try results.waitForResult(versionless).type == "echo")
            // A letter that names no queue: the broker's own, from a queue long gone.
            let orphan = "\(tag)-orphan"
            try connection.publish(
                Array(#"{"version":1,"id":"\#(orphan)","type":"echo"}"#.utf8), exchange: Topology.deadExchange,
                routingKey: queue, properties: MessageProperties(contentType: "application/json", persistent: true),
                channel: 1)
            try dead.read(timeout: .seconds(30)) { _ in dead.messages.count >= 6 }

            let list = try CLI.run(["dead", "list", "--url", url])
            #expect(list.status == 0, "\(list.stderr)")
            let lines = list.stdout.split(separator: "\n")
            for id in [twice, huge, forged, orphan] {
                #expect(lines.contains { $0.hasPrefix("\(id) ") }, "no line for \(id):\n\(list.stdout)")
            }
            #expect(!lines.contains { $0.hasPrefix("FORGED-LINE") }, "\(list.stdout)")
            #expect(list.stdout.contains(#"type=no\nFORGED-LINE \u{1B}[31m"#), "\(list.stdout)")
            #expect(lines.contains { $0.hasPrefix("\(orphan) reason=- ") }, "\(list.stdout)")
            let oversizedLine = lines.first { $0.hasPrefix("\(oversized) reason=oversized") }
            #expect(oversizedLine?.contains("type=amqp-type") == true, "\(list.stdout)")
            let versionlessLine = lines.first { $0.hasPrefix("\(versionless) reason=invalidDescriptor") }
            #expect(versionlessLine?.contains("type=echo") == true, "\(list.stdout)")

            let requeue = try CLI.run(["dead", "requeue", twice, orphan, "--url", url])
            #expect(requeue.status == 1)
            #expect(requeue.stdout.contains("requeued \(twice) to \(queue)"), "\(requeue.stdout)")
            #expect(requeue.stderr.contains("\(orphan) stays dead: it names no queue"), "\(requeue.stderr)")
            // Back in its queue, it is dead-lettered again, under the same id, as the rerun of a requeued job.
            try results.read(timeout: .seconds(30)) { _ in results.results(for: twice).count == 2 }
            #expect(results.results(for: twice).map { $0.requeuedAt != nil } == [false, true])
            #expect(worker.process.isRunning)
        }

        @Test("enqueue warns of a job larger than a worker takes by default, and enqueues it")
        func oversizedWarning() throws {
            let queue = TestEnvironment.uniqueName("oversized-warning")
            defer { BrokerProbe.delete(queue) }
            let input = try TestEnvironment.temporaryDirectory().appendingPathComponent("big.json")
            try Data("\"\(String(repeating: "x", count: 1 << 20))\"".utf8).write(to: input)
            let output = try CLI.run(
                [
                    "enqueue", "echo", "--input", "@" + input.path, "--queue", queue, "--url",
                    try TestEnvironment.brokerURL,
                ])
            #expect(output.status == 0, "\(output.stderr)")
            let id = output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(output.stderr.contains("warning: job \(id) is "), "\(output.stderr)")
            #expect(output.stderr.contains("unless started with --max-message-bytes"), "\(output.stderr)")
            #expect(try BrokerProbe.depth(of: queue) == 1)
        }

        @Test("a job that fails in its handler is dead-lettered too, with the handler's code")
        func handlerFailure() throws {
            let queue = TestEnvironment.uniqueName("fail")
            defer { BrokerProbe.delete(queue) }
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let output = try CLI.run([
                "enqueue", "fail", "--url", try TestEnvironment.brokerURL, "--queue", queue, "--wait",
                "--input", #"{"code":"diskFull","message":"no space left"}"#,
            ])
            #expect(output.status == 3)
            #expect(output.stdout.contains("error=diskFull: no space left"))
            let id = try #require(output.stdout.split(separator: "\n").first.map(String.init))
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == id } }
            let letter = try #require(dead.messages.first { $0.properties.messageID == id })
            #expect(letter.properties.headers?[Topology.deadReasonHeader]?.stringValue == "diskFull")
        }
    }

    @Suite struct BrokerErrors {
        /// The commands of a worker and of a scheduler (of a schedule file of its own), before their options.
        private static func workerAndScheduler() throws -> [[String]] {
            let file = try TestEnvironment.temporaryDirectory().appendingPathComponent("schedule.json")
            try #"{"schedules": [{"name": "n", "every": "1m", "type": "echo"}]}"#.write(
                to: file, atomically: true, encoding: .utf8)
            return [["worker"], ["schedule", file.path]]
        }

        @Test("a broker that is not there: one clear line and a non-zero exit")
        func brokerDown() throws {
            let output = try CLI.run(["enqueue", "echo", "--url", "amqp://guest:guest@127.0.0.1:1/%2F"])
            #expect(output.status == 1)
            #expect(output.stderr.contains("cannot connect to 127.0.0.1:1"))
            #expect(output.stderr.split(separator: "\n").count == 1, "\(output.stderr)")
        }

        @Test(
            "a worker or scheduler logging JSON that cannot connect says so in JSON, every line of it, retries included"
        )
        func brokerDownInJSON() throws {
            for arguments in try Self.workerAndScheduler() {
                let output = try CLI.run(
                    arguments + [
                        "--url", "amqp://guest:guest@127.0.0.1:1/%2F", "--log-format", "json", "--wait-for-broker",
                        "1s",
                    ])
                #expect(output.status == 1, "\(arguments)")
                let lines = output.stderr.split(separator: "\n")
                #expect(!lines.isEmpty, "\(arguments)")
                for line in lines {
                    let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    #expect(object != nil, "\(arguments): not JSON: \(line)")
                }
                #expect(output.stderr.contains("cannot connect; trying again"), "\(arguments): \(output.stderr)")
                #expect(output.stderr.contains("cannot connect to 127.0.0.1:1"), "\(arguments): \(output.stderr)")
                #expect(
                    output.stderr.contains("(still, after trying for 1.0 seconds)"), "\(arguments): \(output.stderr)")
            }
        }

        @Test("--wait-for-broker 0: a worker and a scheduler with no broker fail at once, with one line")
        func brokerDownNoWait() throws {
            for arguments in try Self.workerAndScheduler() {
                let output = try CLI.run(
                    arguments + ["--url", "amqp://guest:guest@127.0.0.1:1/%2F", "--wait-for-broker", "0"])
                #expect(output.status == 1, "\(arguments)")
                #expect(output.stderr.contains("cannot connect to 127.0.0.1:1"), "\(arguments): \(output.stderr)")
                #expect(!output.stderr.contains("trying again"), "\(arguments): \(output.stderr)")
            }
        }

        @Test("refused credentials: a clear line that names the user and hides the password")
        func wrongPassword() throws {
            let url = try TestEnvironment.brokerURL.replacingOccurrences(of: "guest:guest@", with: "guest:s3cret-pw@")
            // A worker waits for a broker that does not listen yet (--wait-for-broker), never for a refused password.
            for arguments in [["enqueue", "echo"], ["worker"], ["results"], ["cancel", "x"]] {
                let output = try CLI.run(arguments + ["--url", url])
                #expect(output.status == 1, "\(arguments)")
                #expect(output.stderr.contains("refused user 'guest'"), "\(arguments): \(output.stderr)")
                #expect(!output.stderr.contains("s3cret-pw"))
                #expect(output.stderr.split(separator: "\n").count == 1, "\(arguments): \(output.stderr)")
            }
        }

        @Test("a malformed URL is rejected before connecting")
        func badURL() throws {
            let output = try CLI.run(["enqueue", "echo", "--url", "http://nowhere"])
            #expect(output.status != 0)
            #expect(output.stderr.contains("invalid broker URL"))
        }

        @Test("an unknown virtual host is reported as such")
        func unknownVirtualHost() throws {
            let url = try TestEnvironment.brokerURL.replacingOccurrences(of: "/%2F", with: "/no-such-vhost")
            let output = try CLI.run(["enqueue", "echo", "--url", url])
            #expect(output.status == 1)
            #expect(output.stderr.contains("no-such-vhost"), "\(output.stderr)")
        }
    }
}
