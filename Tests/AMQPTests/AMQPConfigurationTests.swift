import Testing

@testable import AMQP

@Suite("AMQPConfiguration")
struct AMQPConfigurationTests {
    @Test func parsesEveryPartOfAURL() throws {
        let configuration = try AMQPConfiguration(url: "amqp://alice:s3cret@broker.example:5673/jobs")
        #expect(configuration.host == "broker.example")
        #expect(configuration.port == 5673)
        #expect(configuration.virtualHost == "jobs")
        #expect(configuration.user == "alice")
        #expect(configuration.password == "s3cret")
        #expect(!configuration.usesTLS)
        #expect(configuration.caCertificatePath == nil)
    }

    @Test func percentTwoFIsTheRootVirtualHost() throws {
        let configuration = try AMQPConfiguration(url: "amqp://guest:guest@localhost:5672/%2F")
        #expect(configuration.virtualHost == "/")
    }

    @Test func percentEncodedCredentialsAreDecoded() throws {
        let configuration = try AMQPConfiguration(url: "amqp://us%40er:p%3Ass%2Fw@localhost/v%2Fh")
        #expect(configuration.user == "us@er")
        #expect(configuration.password == "p:ss/w")
        #expect(configuration.virtualHost == "v/h")
    }

    @Test func utf8EscapesAndAColonInTheVirtualHostAreDecoded() throws {
        // librabbitmq 0.11 refuses both, though a URI allows them (Python's urllib.parse.quote writes the first).
        let configuration = try AMQPConfiguration(url: "amqp://j%C3%BCrgen:p%C3%A4ss%2Fw@localhost:5673/b%C3%BCro:1")
        #expect(configuration.user == "jürgen")
        #expect(configuration.password == "päss/w")
        #expect(configuration.virtualHost == "büro:1")
        #expect(configuration.host == "localhost" && configuration.port == 5673)
        #expect(try AMQPConfiguration(url: "amqp://u:p@h/x%3Ay").virtualHost == "x:y")
        #expect(try AMQPConfiguration(url: "amqp://u:%E2%82%AC@h/").password == "€")
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://u:p@h/%C3") }
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://u:p@h/a%ZZ:b") }
    }

    @Test func defaultsFollowLibrabbitmq() throws {
        let configuration = try AMQPConfiguration(url: "amqp://localhost")
        #expect(configuration.host == "localhost")
        #expect(configuration.port == 5672)
        #expect(configuration.user == "guest")
        #expect(configuration.password == "guest")
        #expect(configuration.virtualHost == "/")
        #expect(configuration.heartbeat == 30)
        #expect(configuration.connectTimeout == .seconds(10))
        #expect(configuration.connectionName == "warren")
    }

    @Test func amqpsDefaultsToPort5671AndTLS() throws {
        let configuration = try AMQPConfiguration(url: "amqps://u:p@secure.example/%2F")
        #expect(configuration.usesTLS)
        #expect(configuration.port == 5671)
        #expect(configuration.host == "secure.example")
    }

    @Test func amqpsKeepsAnExplicitPort() throws {
        let configuration = try AMQPConfiguration(url: "amqps://u:p@secure.example:8671/%2F")
        #expect(configuration.usesTLS)
        #expect(configuration.port == 8671)
    }

    @Test func cacertfileQueryItemSetsTheCAPath() throws {
        let configuration = try AMQPConfiguration(
            url: "amqps://u:p@secure.example:5671/%2F?cacertfile=/etc/ssl/ca.pem&verify=verify_peer")
        #expect(configuration.caCertificatePath == "/etc/ssl/ca.pem")
        #expect(configuration.virtualHost == "/")
        #expect(configuration.usesTLS)
    }

    @Test func heartbeatAndConnectionTimeoutQueryItemsSetTheirSettings() throws {
        let configuration = try AMQPConfiguration(url: "amqp://u:p@h/%2F?heartbeat=5&connection_timeout=2500")
        #expect(configuration.heartbeat == 5)
        #expect(configuration.connectTimeout == .milliseconds(2500))
        #expect(try AMQPConfiguration(url: "amqp://h/%2F?heartbeat=0").heartbeat == 0)
    }

    @Test(
        "query items Warren does not take, or takes otherwise, are refused by name, not ignored",
        arguments: [
            ("amqps://u:p@h/%2F?cacertfle=/ca.pem", "unsupported query item 'cacertfle'"),
            ("amqps://u:p@h/%2F?certfile=/me.pem", "unsupported query item 'certfile'"),
            ("amqp://u:p@h/%2F?cacertfile=/ca.pem", "cacertfile is for amqps:// URLs"),
            ("amqps://u:p@h/%2F?verify=verify_none", "Warren always verifies"),
            ("amqp://u:p@h/%2F?heartbeat=abc", "heartbeat=abc: expected seconds"),
            ("amqp://u:p@h/%2F?heartbeat=70000", "heartbeat=70000"),
            ("amqp://u:p@h/%2F?connection_timeout=0", "connection_timeout=0: expected milliseconds"),
        ])
    func unknownQueryItemsAreRefused(_ url: String, _ problem: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(":p@") == false)
    }

    @Test func anUnparsableURLSaysWhatToPercentEncode() {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "amqp://u:pa/ss@h/%2F") }
        #expect(error?.message.contains("percent-encode '/'") == true)
        #expect(error?.message.contains("pa/ss") == false)
    }

    @Test func cacertfileIsPercentDecoded() throws {
        let configuration = try AMQPConfiguration(url: "amqps://u:p@h/%2F?cacertfile=/etc/my%20certs/ca.pem")
        #expect(configuration.caCertificatePath == "/etc/my certs/ca.pem")
    }

    @Test(arguments: ["http://localhost", "not a url", "amqp://host:notaport/"])
    func invalidURLsThrowInvalidURL(_ url: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("expected amqp://user:password@host:port/vhost") == true)
    }

    @Test func theInvalidURLErrorHidesThePassword() {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: "http://bob:hunter2@host/") }
        #expect(error?.message.contains("hunter2") == false)
        #expect(error?.message.contains("bob:***@host") == true)
    }

    @Test func redactedURLHidesThePassword() throws {
        let configuration = try AMQPConfiguration(url: "amqp://alice:s3cret@broker:5673/jobs")
        #expect(configuration.redactedURL == "amqp://alice:***@broker:5673/jobs")
        let root = try AMQPConfiguration(url: "amqps://alice:s3cret@broker/%2F")
        #expect(root.redactedURL == "amqps://alice:***@broker:5671/%2F")
    }

    @Test func redactedURLStillParsesForAVirtualHostWithASlash() throws {
        let configuration = try AMQPConfiguration(url: "amqp://alice:s3cret@broker/team%2Fjobs")
        #expect(configuration.virtualHost == "team/jobs")
        #expect(configuration.redactedURL == "amqp://alice:***@broker:5672/team%2Fjobs")
    }

    @Test func redactHidesPasswordsInArbitraryText() {
        #expect(
            AMQPConfiguration.redact("connecting to amqp://u:pw@h:5672/%2F failed")
                == "connecting to amqp://u:***@h:5672/%2F failed")
        #expect(
            AMQPConfiguration.redact("a amqp://a:one@h1/v and amqps://b:two@h2 done")
                == "a amqp://a:***@h1/v and amqps://b:***@h2 done")
        #expect(AMQPConfiguration.redact("amqp://u:p@ss@host/") == "amqp://u:***@host/")
        #expect(AMQPConfiguration.redact("'amqp://u:secret@h' failed") == "'amqp://u:***@h' failed")
        #expect(AMQPConfiguration.redact("amqp://u:one@h1,amqp://u:two@h2") == "amqp://u:***@h1,amqp://u:***@h2")
    }

    @Test func redactLeavesTextWithoutPasswordsAlone() {
        #expect(AMQPConfiguration.redact("no url here") == "no url here")
        #expect(AMQPConfiguration.redact("amqp://host:5672/%2F") == "amqp://host:5672/%2F")
        #expect(AMQPConfiguration.redact("amqp://user@host/") == "amqp://user@host/")
        #expect(AMQPConfiguration.redact("see https://example.com/a:b@c") == "see https://example.com/a:b@c")
        #expect(AMQPConfiguration.redact("") == "")
    }
}
