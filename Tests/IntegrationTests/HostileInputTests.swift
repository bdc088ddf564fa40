import AMQP
import Foundation
import Testing
import Warren

/// A corpus of hostile job messages, sent with a client that is not ours (amqp-publish) to one worker with default
/// limits, a good job after each. The worker must survive every one, dead-letter each with its precise reason, and
/// run every good job. (That good jobs keep their normal speed meanwhile is the benchmark's business, not a test's.)
extension Integration {
    @Suite struct HostileInput {
        struct Hostile: CustomStringConvertible {
            let name: String
            let body: [UInt8]
            var contentType: String? = "application/json"
            /// The expected `x-warren-dead-reason`.
            let code: String
            /// Text the `x-warren-dead-message` must contain.
            let detail: String
            var description: String { name }
        }

        /// Bodies carry `tag`, so that each is unique and its dead letter can be told apart by body alone
        /// (amqp-publish cannot set `message_id`).
        static func corpus(tag: String) -> [Hostile] {
            func job(_ fields: String) -> [UInt8] { Array("{\(fields)}".utf8) }
            func id(_ n: Int) -> String { "\(tag)-\(n)" }
            let huge = String(repeating: "x", count: 500_000)
            let nestedInput = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
            return [
                Hostile(
                    name: "a body over the 1 MiB default",
                    body: job(#""version":1,"id":"\#(id(1))","type":"echo","input":"\#(huge + huge + huge)""#),
                    code: "oversized", detail: "exceeds the limit of 1048576 bytes"),
                Hostile(
                    name: "100,000 opening brackets", body: Array(repeating: UInt8(ascii: "["), count: 100_000),
                    code: "invalidDescriptor", detail: "deeper than the limit of 64 levels"),
                Hostile(
                    name: "input nested 100 levels deep",
                    body: job(#""version":1,"id":"\#(id(3))","type":"echo","input":\#(nestedInput)"#),
                    code: "invalidDescriptor", detail: "deeper than the limit of 64 levels"),
                Hostile(
                    name: "invalid UTF-8 in a string",
                    body: job(#""version":1,"id":"\#(id(4))","type":"ech"#) + [0xFF, 0xFE] + Array(#"o""#.utf8) + [125],
                    code: "malformedMessage", detail: "not valid JSON"),
                Hostile(
                    name: "binary garbage", body: Array(tag.utf8) + (0...255).map { UInt8($0) },
                    code: "malformedMessage", detail: "not valid JSON"),
                Hostile(name: "an empty body", body: [], code: "malformedMessage", detail: "not valid JSON"),
                Hostile(
                    name: "JSON that is not an object", body: Array(#"["\#(tag)",1,2]"#.utf8),
                    code: "invalidDescriptor", detail: "not an object"),
                Hostile(
                    name: "an id that is a number", body: job(#""version":1,"id":42,"type":"echo","key":"\#(tag)""#),
                    code: "invalidDescriptor", detail: "descriptor.id"),
                Hostile(
                    name: "a type that is an array", body: job(#""version":1,"id":"\#(id(9))","type":["echo"]"#),
                    code: "invalidDescriptor", detail: "descriptor.type"),
                Hostile(
                    name: "a negative sequence",
                    body: job(#""version":1,"id":"\#(id(10))","type":"echo","sequence":-1"#),
                    code: "invalidDescriptor", detail: "descriptor.sequence"),
                Hostile(
                    name: "a sequence beyond 2^64",
                    body: job(#""version":1,"id":"\#(id(11))","type":"echo","sequence":18446744073709551616"#),
                    code: "invalidDescriptor", detail: "descriptor.sequence"),
                Hostile(
                    name: "input the operation cannot take",
                    body: job(#""version":1,"id":"\#(id(12))","type":"sum","input":{"numbers":["one"]}"#),
                    code: "invalidInput", detail: "numbers[0]"),
                Hostile(
                    name: "an unknown priority name",
                    body: job(#""version":1,"id":"\#(id(13))","type":"echo","priority":"urgent""#),
                    code: "invalidDescriptor", detail: "descriptor.priority"),
                Hostile(
                    name: "a numeric priority out of range",
                    body: job(#""version":1,"id":"\#(id(14))","type":"echo","priority":9"#),
                    code: "invalidDescriptor", detail: "descriptor.priority"),
                Hostile(
                    name: "a 500 KB priority",
                    body: job(#""version":1,"id":"\#(id(15))","type":"echo","priority":"\#(huge)""#),
                    code: "invalidDescriptor", detail: "descriptor.priority"),
                Hostile(
                    name: "no id", body: job(#""version":1,"type":"echo","key":"\#(tag)""#),
                    code: "invalidDescriptor", detail: "missing key 'id'"),
                Hostile(
                    name: "no version", body: job(#""id":"\#(id(17))","type":"echo""#),
                    code: "invalidDescriptor", detail: "missing key 'version'"),
                Hostile(
                    name: "no type", body: job(#""version":1,"id":"\#(id(18))""#),
                    code: "invalidDescriptor", detail: "missing key 'type'"),
                Hostile(
                    name: "content type text/plain", body: job(#""version":1,"id":"\#(id(19))","type":"echo""#),
                    contentType: "text/plain", code: "unsupportedContentType", detail: "'text/plain'"),
                Hostile(
                    name: "content type application/xml", body: job(#""version":1,"id":"\#(id(20))","type":"echo""#),
                    contentType: "application/xml", code: "unsupportedContentType", detail: "'application/xml'"),
                Hostile(
                    name: "version 2", body: job(#""version":2,"id":"\#(id(21))","type":"echo""#),
                    code: "unsupportedVersion", detail: "version 2 is not supported"),
                Hostile(
                    name: "version 99999999999", body: job(#""version":99999999999,"id":"\#(id(22))","type":"echo""#),
                    code: "unsupportedVersion", detail: "version 99999999999"),
                Hostile(
                    name: "version as a string", body: job(#""version":"1","id":"\#(id(23))","type":"echo""#),
                    code: "invalidDescriptor", detail: "descriptor.version"),
                Hostile(
                    name: "an unknown type", body: job(#""version":1,"id":"\#(id(24))","type":"rm -rf /""#),
                    code: "unknownType", detail: "unknown operation type 'rm -rf /'"),
                Hostile(
                    name: "a 500 KB type name", body: job(#""version":1,"id":"\#(id(25))","type":"\#(huge)""#),
                    code: "unknownType", detail: "unknown operation type 'xxx"),
                Hostile(
                    name: "a deadline that is not a date",
                    body: job(#""version":1,"id":"\#(id(26))","type":"echo","deadline":"tomorrow""#),
                    code: "invalidDescriptor", detail: "descriptor.deadline"),
                Hostile(
                    name: "a deadline past the year 9999",
                    body: job(#""version":1,"id":"\#(id(27))","type":"echo","deadline":1e15"#),
                    code: "invalidDescriptor", detail: "date out of range"),
                Hostile(
                    name: "a dependency that cannot be a job id",
                    body: job(#""version":1,"id":"\#(id(35))","type":"echo","dependencies":["a b"]"#),
                    code: "invalidDescriptor", detail: "dependencies: job id must be"),
                Hostile(
                    name: "a deadline on February 30",
                    body: job(#""version":1,"id":"\#(id(34))","type":"echo","deadline":"2030-02-30T00:00:00Z""#),
                    code: "invalidDescriptor", detail: "no such day or time"),
                Hostile(
                    name: "an id with a routing wildcard", body: job(#""version":1,"id":"\#(id(28)).#","type":"echo""#),
                    code: "invalidDescriptor", detail: "job id must be"),
                Hostile(
                    name: "numbers whose sum leaves 64 bits",
                    body: job(
                        #""version":1,"id":"\#(id(30))","type":"sum","input":{"numbers":[9223372036854775807,1]}"#),
                    code: "invalidInput",
                    detail: "operation type 'sum': input.numbers[1]: the sum leaves the 64-bit integer range"),
                Hostile(
                    name: "a sleep of 1e19 seconds",
                    body: job(#""version":1,"id":"\#(id(31))","type":"sleep","input":{"seconds":1e19}"#),
                    code: "invalidInput", detail: "is outside 0...1000000000"),
                Hostile(
                    name: "a sleep of 1e300 seconds",
                    body: job(#""version":1,"id":"\#(id(32))","type":"sleep","input":{"seconds":1e300}"#),
                    code: "invalidInput", detail: "is outside 0...1000000000"),
                Hostile(
                    name: "a negative sleep",
                    body: job(#""version":1,"id":"\#(id(33))","type":"sleep","input":{"seconds":-1}"#),
                    code: "invalidInput", detail: "operation type 'sleep': input.seconds: -1 is outside"),
                Hostile(
                    name: "a type that holds a log line of its own",
                    body: job(
                        #""version":1,"id":"\#(id(36))","type":"evil\nFORGED-LINE info warren.worker: x","input":1"#),
                    code: "unknownType", detail: "FORGED-LINE"),
                Hostile(
                    name: "a handler failure with a 500 KB message",
                    body: job(#""version":1,"id":"\#(id(29))","type":"fail","input":{"message":"\#(huge)"}"#),
                    code: "requestedFailure", detail: "xxx"),
            ]
        }

        @Test("hostile messages from a foreign client are each dead-lettered with their reason; good jobs all run")
        func hostileCorpus() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("hostile")
            defer { BrokerProbe.delete(queue) }
            let tag = TestEnvironment.uniqueName("hostile")
            let results = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let producer = try Producer.forTests()
            var good: [String] = []
            func goodJob() throws {
                good.append(
                    try producer.enqueue(JobRequest(type: "echo", input: .string("good \(good.count)"), queue: queue))
                        .id)
            }

            // A duplicate id needs the first copy still running: a long sleep, cancelled at the end.
            let sleeperID = "\(tag)-sleeper"
            let sleeper = Array(#"{"version":1,"id":"\#(sleeperID)","type":"sleep","input":{"seconds":3600}}"#.utf8)
            try ForeignPublisher.publish(sleeper, url: url, routingKey: queue)
            try worker.waitForStart(of: sleeperID)
            var corpus = Self.corpus(tag: tag)
            corpus.append(
                Hostile(
                    name: "a duplicate of a running job's id", body: sleeper, code: "duplicateID", detail: sleeperID))

            for hostile in corpus {
                try ForeignPublisher.publish(
                    hostile.body, url: url, routingKey: queue, contentType: hostile.contentType)
                try goodJob()
            }
            let cancel = Array(#"{"version":1,"kind":"cancel","jobIds":["\#(sleeperID)"]}"#.utf8)
            try ForeignPublisher.publish(cancel, url: url, exchange: Topology.controlExchange, routingKey: "")

            let goodResults = try results.waitForResults(good, timeout: .seconds(120))
            #expect(goodResults.count == good.count)
            #expect(
                goodResults.allSatisfy { $0.status == .succeeded }, "\(goodResults.filter { $0.status != .succeeded })")
            #expect(try results.waitForResult(sleeperID).status == .cancelled)

            func letter(for hostile: Hostile) -> Delivery? {
                dead.messages.first {
                    $0.body == hostile.body && $0.properties.headers?[Topology.deadQueueHeader]?.stringValue == queue
                }
            }
            try dead.read(timeout: .seconds(60)) { _ in corpus.allSatisfy { letter(for: $0) != nil } }
            for hostile in corpus {
                guard let letter = letter(for: hostile) else {
                    Issue.record("\(hostile.name): no dead letter")
                    continue
                }
                let headers = letter.properties.headers ?? [:]
                let message = headers[Topology.deadMessageHeader]?.stringValue ?? ""
                #expect(
                    headers[Topology.deadReasonHeader]?.stringValue == hostile.code,
                    "\(hostile.name): \(message.prefix(300))")
                #expect(message.contains(hostile.detail), "\(hostile.name): \(message.prefix(300))")
                #expect(message.unicodeScalars.count <= JobError.maxMessageLength, "\(hostile.name)")
            }
            let forged = worker.stderr.split(separator: "\n").filter { $0.hasPrefix("FORGED-LINE") }
            #expect(forged.isEmpty, "a job type forged a log line: \(forged)")
            #expect(worker.process.isRunning, "the worker died: \(worker.stderr.suffix(2000))")
            #expect(!worker.stderr.contains("reconnect"), "hostile input cost the worker its connection")
        }

        @Test("a control message over 8 MiB is ignored; a cancel of many ids goes out in parts and still cancels")
        func largeControlMessages() throws {
            // A virtual host of its own: its control stream keeps the large message a day, which every worker the
            // other tests start would read.
            let (vhost, url) = try Chaos.addVirtualHost("hostile-large-control")
            defer { try? Chaos.brokerCtl(["delete_vhost", vhost]) }
            let queue = "jobs"
            let worker = try ChildProcess(
                TestEnvironment.warrenBinary,
                ["worker", "--url", url, "--queue", queue, "--log-level", "debug", "--worker-id", vhost],
                name: "worker in \(vhost)")
            defer { worker.terminate() }
            try worker.waitForStderr(containing: "worker started")
            let huge = #"{"version":1,"kind":"cancel","jobIds":["\#(String(repeating: "x", count: 9 << 20))"]}"#
            try ForeignPublisher.publish(Array(huge.utf8), url: url, exchange: Topology.controlExchange, routingKey: "")
            try worker.waitForStderr(containing: "ignoring a control message larger than 8388608 bytes")

            let producer = try Producer.forTests(url: url)
            let sleeper = try producer.enqueue(
                JobRequest(type: "sleep", input: ["seconds": 3600], queue: queue), watch: true)
            try worker.waitForStart(of: sleeper.id)
            // Its id first, then 25,000 others: three messages, the first holding it.
            try producer.cancel(jobIDs: [sleeper.id] + (0..<25_000).map { "unknown-\($0)" })
            #expect(try producer.waitForResult(of: sleeper.id, timeout: .seconds(60)).status == .cancelled)
            #expect(!worker.stderr.contains("reconnect"), "\(worker.stderr.suffix(2000))")
        }

        @Test("status requests no reply can go to, or dated ahead, are ignored, and cost no worker its connection")
        func hostileStatusRequests() throws {
            let url = try TestEnvironment.brokerURL
            let queue = TestEnvironment.uniqueName("hostile-status")
            defer { BrokerProbe.delete(queue) }
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let now = WireCoding.text(of: Date())
            for (replyTo, sentAt) in [
                (String(repeating: "q", count: 300), now), ("amq.rabbitmq.reply-to.abc.def", now),
                (String(repeating: "q", count: 300), "2099-01-01T00:00:00Z"),
            ] {
                let request = #"{"version":1,"kind":"status","replyTo":"\#(replyTo)","sentAt":"\#(sentAt)"}"#
                try ForeignPublisher.publish(
                    Array(request.utf8), url: url, exchange: Topology.controlExchange, routingKey: "")
            }
            try worker.waitForStderr(
                containing: "ignoring a status request: its replyTo is a direct reply-to pseudo-queue")
            // Jobs still run, and a worker started now, which replays the requests, starts.
            #expect(try CLI.run(["enqueue", "echo", "--queue", queue, "--wait", "--url", url]).status == 0)
            let late = try CLI.startWorker(queue: queue)
            defer { late.terminate() }
            #expect(!worker.stderr.contains("reconnect"), "\(worker.stderr.suffix(2000))")
        }
    }
}
