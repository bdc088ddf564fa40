import Testing

@testable import AMQP

/// URLs found by `scripts/fuzz`, or written against it: none may crash, and no password may leak.
@Suite("AMQPConfiguration with hostile URLs")
struct AMQPConfigurationHostileURLTests {
    @Test(arguments: ["amqp://h/?=", "amqp://h/%2F?=x&&=", "amqps://h?&cacertfile"])
    func emptyQueryItemsDoNotCrash(_ url: String) throws {
        let configuration = try AMQPConfiguration(url: url)
        #expect(configuration.host == "h")
    }

    @Test func theCACertificatePathIsPercentDecoded() throws {
        let configuration = try AMQPConfiguration(url: "amqps://h/%2F?cacertfile=/tmp/my%20ca/ca.pem")
        #expect(configuration.caCertificatePath == "/tmp/my ca/ca.pem")
    }

    @Test(arguments: ["amqp://h\0evil/", "amqp://u:pw\nsecret@h/", "amqp://u:p secret@h/", "amqp://h/\u{7F}secret"])
    func spacesAndControlCharactersAreRejectedWithoutEchoingTheURL(_ url: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("percent-encode") == true)
        #expect(error?.message.contains("secret") == false)
        #expect(error?.message.contains("evil") == false)
        #expect(error?.message.contains("\n") == false)
    }

    @Test func redactHidesPasswordsWithUnencodedSlashesAtSignsAndCommas() {
        #expect(AMQPConfiguration.redact("amqp://u:pa/ss@host/v") == "amqp://u:***@host/v")
        #expect(AMQPConfiguration.redact("amqp://u:pa,ss@host/v") == "amqp://u:***@host/v")
        #expect(AMQPConfiguration.redact("AMQPS://u:p@ss@host/v") == "AMQPS://u:***@host/v")
        #expect(
            AMQPConfiguration.redact("amqp://a:one@h1,amqps://b:two@h2/%2F") == "amqp://a:***@h1,amqps://b:***@h2/%2F")
    }

    @Test(arguments: ["amqp://u:Ab", "amqp://u:Ab/xyz", "amqps://u:1a"])
    func theFirstPieceOfAPasswordCutAtAURLListCommaIsNotShown(_ url: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect(error?.message.contains("://u:***") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("Ab") == false && error?.message.contains("1a") == false)
        #expect(error?.message.contains("xyz") == false, "what follows the colon may all be password")
    }

    @Test func anInvalidURLWithASlashInThePasswordDoesNotShowIt() {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://u:pa/ss@host/v") }
        #expect(error?.message.contains("pa/ss") == false, "\(error?.message ?? "")")
        #expect(error?.message.contains("amqp://u:***@host/v") == true, "\(error?.message ?? "")")
    }
}
