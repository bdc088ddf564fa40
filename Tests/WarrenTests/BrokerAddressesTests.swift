import AMQP
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
}
