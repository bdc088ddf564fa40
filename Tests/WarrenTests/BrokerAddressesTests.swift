import AMQP
import Foundation
import Testing

@testable import Warren

@Suite("BrokerAddresses")
struct BrokerAddressesTests {
    @Test func aCommaSplitsOnlyBeforeAnotherURL() throws {
        let addresses = try BrokerAddresses("amqp://a:p,w@h1, amqps://b:two@h2/%2F", connectionName: "t")
        #expect(addresses.configurations.map(\.host) == ["h1", "h2"])
        #expect(addresses.configurations.map(\.password) == ["p,w", "two"])
        #expect(addresses.configurations.map(\.connectionName) == ["t", "t"])
    }

    @Test func anInvalidAddressInAListDoesNotShowAPassword() {
        let error = #expect(throws: WarrenError.self) {
            try BrokerAddresses("amqp://a:se,cret@h1:x,amqp://b:other@h2", connectionName: "t")
        }
        #expect(error?.message.contains("cret") == false, "\(error?.message ?? "")")
        #expect(error?.message.contains("other") == false, "\(error?.message ?? "")")
    }

    @Test(arguments: ["", " ", ","]) func anEmptyListIsRefused(_ urls: String) {
        #expect(throws: WarrenError.self) { try BrokerAddresses(urls, connectionName: "t") }
    }

    /// Connecting to port 1 of this host: nothing listens there, so every attempt is refused at once.
    static let nobody = "amqp://guest:guest@127.0.0.1:1/%2F"

    @Test func nothingListeningIsTriedAgainUntilThePatienceRunsOut() throws {
        let addresses = try BrokerAddresses(Self.nobody, connectionName: "t")
        var retried: [String] = []
        var paused: [Duration] = []
        let patience = Duration.milliseconds(300)
        let error = #expect(throws: WarrenError.self) {
            _ = try addresses.connect(
                patience: patience, maxDelay: .milliseconds(200), fellBack: { _ in },
                retrying: { retried.append($0.message) },
                pause: { duration in
                    paused.append(duration)
                    Thread.sleep(forTimeInterval: Double(duration.components.attoseconds) / 1e18)
                    return true
                })
        }
        #expect(error?.message.hasSuffix("(still, after trying for 0.3 seconds)") == true, "\(error?.message ?? "")")
        #expect(retried.count >= 2 && retried.count == paused.count)
        #expect(retried.allSatisfy { $0.contains("cannot connect to 127.0.0.1:1") })
        // Backoff: no pause is longer than the patience, nor than the longest delay with its jitter.
        #expect(paused.allSatisfy { $0 <= .milliseconds(250) && $0 >= .zero })
    }

    @Test func aFailureThatTimeWillNotMendIsThrownAtOnce() throws {
        let addresses = try BrokerAddresses(
            "amqps://guest:guest@127.0.0.1:1/%2F?cacertfile=/nonexistent/ca.pem", connectionName: "t")
        var retries = 0
        let error = #expect(throws: WarrenError.self) {
            _ = try addresses.connect(
                patience: .seconds(60), maxDelay: .seconds(1), fellBack: { _ in }, retrying: { _ in retries += 1 },
                pause: { _ in true })
        }
        #expect(error?.message.contains("cannot read CA certificate file") == true, "\(error?.message ?? "")")
        #expect(retries == 0)
    }

    @Test func noPatienceTriesOnceAndAStopEndsTheWait() throws {
        let addresses = try BrokerAddresses(Self.nobody, connectionName: "t")
        var pauses = 0
        let error = #expect(throws: WarrenError.self) {
            _ = try addresses.connect(
                patience: .zero, maxDelay: .seconds(1), fellBack: { _ in }, retrying: { _ in },
                pause: { _ in
                    pauses += 1
                    return true
                })
        }
        #expect(error?.message.contains("still") == false, "\(error?.message ?? "")")
        #expect(pauses == 0)
        // Without a limit (a recycled worker's fresh copy), it waits until the caller stops it.
        let connection = try addresses.connect(
            patience: nil, maxDelay: .seconds(1), fellBack: { _ in }, retrying: { _ in },
            pause: { _ in
                pauses += 1
                return pauses < 3
            })
        #expect(connection == nil && pauses == 3)
    }
}
