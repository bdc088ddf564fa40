import ArgumentParser
import Foundation
import Testing

@testable import WarrenCLI

/// `warren enqueue --at` and `warren results --since` take an ISO 8601 instant: one that names no such day or time
/// is refused, where Foundation's parser would move it to another (2027-02-30 to 2 March).
@Suite("ISO 8601 instants on the command line")
struct InstantArgumentTests {
    @Test(arguments: [
        "2027-02-30T09:00:00Z", "2027-04-31T09:00:00Z", "2027-01-01T24:30:00Z", "2027-01-01T10:61:00Z",
        "1582-10-05T00:00:00Z",
    ])
    func aDayOrTimeThatDoesNotExistIsRefused(_ text: String) {
        #expect(Instant(argument: text) == nil)
        #expect(throws: (any Error).self) { try EnqueueCommand.parse(["echo", "--at", text]) }
        #expect(ResultsSince(argument: text) == nil)
    }

    @Test func realInstantsAreTaken() throws {
        let instant = try #require(Instant(argument: "2028-02-29T09:00:00.5+01:00"))
        #expect(instant.date == Date(timeIntervalSince1970: 1_835_424_000.5))
        #expect(Instant(argument: "2027-02-28T23:59:59Z") != nil)
        #expect(ResultsSince(argument: "2027-02-28T23:59:59Z") == .at(Date(timeIntervalSince1970: 1_803_859_199)))
    }
}
