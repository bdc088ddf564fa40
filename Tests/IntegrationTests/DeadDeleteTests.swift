import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct DeadDelete {
        @Test("dead delete asks for --yes, then deletes every letter of the given jobs, and with --all every letter")
        func deletesLetters() throws {
            let url = try TestEnvironment.brokerURL
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: url))
            defer { connection.close() }
            try connection.openChannel(1)
            try Topology.declareDeadLetters(on: connection, channel: 1)
            try connection.enableConfirms(channel: 1)
            let (twice, once, kept) = (
                TestEnvironment.uniqueName("dead-twice"), TestEnvironment.uniqueName("dead-once"),
                TestEnvironment.uniqueName("dead-kept")
            )
            // Job `twice` was dead-lettered twice, as a duplicate delivery can be.
            for id in [twice, once, twice, kept] {
                try connection.publish(
                    Array(#"{"version":1,"id":"\#(id)","type":"echo","sequence":1}"#.utf8),
                    exchange: Topology.deadExchange,
                    routingKey: "jobs",
                    properties: MessageProperties(
                        contentType: "application/json",
                        headers: [Topology.deadReasonHeader: "invalidInput", Topology.deadQueueHeader: "jobs"],
                        persistent: true, messageID: id),
                    channel: 1)
            }
            // The broker confirms the four in order, one by one or several at once.
            try #require(try Self.confirmed(4, on: connection))

            let asked = try CLI.run(["dead", "delete", twice, once, "--url", url])
            #expect(asked.status == 64)
            #expect(
                asked.stderr.contains("this would delete 3 dead letter(s); add --yes to delete them"), "\(asked.stderr)"
            )
            let both = try CLI.run(["dead", "delete", twice, "--all", "--yes", "--url", url])
            #expect(both.status == 64)
            #expect(both.stderr.contains("name job ids, or --all (not both)"))

            let deleted = try CLI.run(["dead", "delete", twice, once, "no-such-job", "--yes", "--url", url])
            #expect(deleted.status == 1, "an id without a letter")
            #expect(deleted.stderr.contains("warren: no dead letter for job no-such-job"), "\(deleted.stderr)")
            let lines = deleted.stdout.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("deleted \(twice) reason=invalidInput queue=jobs") }.count == 2)
            #expect(lines.filter { $0.hasPrefix("deleted \(once) ") }.count == 1)
            let listed = try CLI.run(["dead", "list", "--limit", "100000", "--url", url])
            #expect(!listed.stdout.contains(twice) && !listed.stdout.contains(once), "\(listed.stdout)")
            #expect(listed.stdout.contains(kept), "the other letters stay")

            let askedAll = try CLI.run(["dead", "delete", "--all", "--url", url])
            #expect(askedAll.status == 64)
            #expect(
                askedAll.stderr.contains(/this would delete [1-9][0-9]* dead letter\(s\); add --yes/),
                "\(askedAll.stderr)")
            let all = try CLI.run(["dead", "delete", "--all", "--yes", "--url", url])
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdout.wholeMatch(of: /deleted [1-9][0-9]* dead letter\(s\)\n/) != nil, "\(all.stdout)")
            #expect(try BrokerProbe.depth(of: Topology.deadQueue) == 0)
        }

        /// Whether the broker confirms the publish numbered `tag` on `connection` within 10 s.
        private static func confirmed(_ tag: UInt64, on connection: AMQPConnection) throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if case .confirm(_, let confirmed, _, let ack)? = try connection.nextEvent() {
                    #expect(ack)
                    if confirmed == tag { return true }
                    continue
                }
                connection.waitForActivity(wakeUp: nil, timeout: .milliseconds(100))
            }
            return false
        }
    }
}
