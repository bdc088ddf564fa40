import Foundation
import Testing

@testable import AMQP

/// No password in a redacted URL or an error message, whatever it contains and however many URLs surround it.
@Suite("AMQPConfiguration redaction")
struct AMQPConfigurationRedactionTests {
    /// The input `scripts/fuzz` found: a comma before `amqps{{…` (not a URL) ended the first URL for `redact`, so
    /// the query's `:one@` was shown. Its query item is no query item Warren takes: the refusal shows none of it.
    @Test func theFuzzersMultiHostInputHidesThePassword() throws {
        let url =
            "amqp://a:one@h1,amqps{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\u{FFFD}?{{{{{{:one@h1,amqps{{{{://b{{{{://b:two@h3+%2F"
        #expect(!AMQPConfiguration.redact(url).contains("one"))
        #expect(!AMQPConfiguration.redact(url).contains("two"))
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect(error?.message.contains("unsupported query item '…'") == true)
        #expect(error?.message.contains("one") == false)
        #expect(error?.message.contains("two") == false)
    }

    @Test(arguments: [
        ("amqp://a:one@h1,amqp://b:two@h2", "amqp://a:***@h1,amqp://b:***@h2"),
        ("amqp://a:one@h1, AMQPS://b:two@h2/%2F", "amqp://a:***@h1, AMQPS://b:***@h2/%2F"),
        ("amqp://a:one@h1,amqp://b:two@h2,amqp://c:three@h3/v", "amqp://a:***@h1,amqp://b:***@h2,amqp://c:***@h3/v"),
        ("amqp://a:o,amqp@h1,amqp://b:t,wo@h2", "amqp://a:***@h1,amqp://b:***@h2"),
        ("amqp://a:one@h1,amqpx:two@h2", "amqp://a:***@h2"),
        ("amqp://a:p@s:s/w,o%2Crd@h1", "amqp://a:***@h1"),
        ("amqp://:secret@h", "amqp://:***@h"),
        ("amqp://a:p%40s%3Aw%2Fd@h", "amqp://a:***@h"),
    ])
    func redactHidesEveryPasswordOfAList(_ text: String, _ expected: String) {
        #expect(AMQPConfiguration.redact(text) == expected)
    }

    @Test(arguments: [
        ("amqp://alice:p%40ss@h/v", "p@ss"), ("amqp://alice:p%3Ass@h/v", "p:ss"), ("amqp://alice:p%2Css@h/v", "p,ss"),
        ("amqp://alice:p%2Fss@h/v", "p/ss"), ("amqp://alice:p,ss@h/v", "p,ss"), ("amqp://:secret@h/v", "secret"),
        ("amqp://alice:100%25ok@h/v", "100%ok"),
    ])
    func redactedURLNeverShowsThePassword(_ url: String, _ password: String) throws {
        let configuration = try AMQPConfiguration(url: url)
        #expect(configuration.password == password)
        #expect(!configuration.redactedURL.contains(password))
        #expect(!AMQPConfiguration.redact(url).contains(password))
        let raw = String(url.split(separator: ":")[2].split(separator: "@")[0])
        #expect(!AMQPConfiguration.redact(url).contains(raw))
    }

    @Test func redactedURLEncodesTheUserSoThatItCannotLookLikeAPassword() throws {
        let configuration = try AMQPConfiguration(url: "amqp://a%3Apw%40b:pw@h/v")
        #expect(configuration.user == "a:pw@b")
        #expect(configuration.redactedURL == "amqp://a%3Apw%40b:***@h:5672/v")
        #expect(try AMQPConfiguration(url: "amqp://:pw@h/").redactedURL == "amqp://:***@h:5672/")
    }

    @Test(arguments: [
        "alice:secret@host", "amqp://alice:secret@[h", "amqp://alice:se/cret@h:x", "amqp://alice:secret@h:port",
        "amqp://alice:se@cret@h:x", "amqp://alice:se%40cret@h:x", "amqp://a:secret@h1,amqp://b:secret@h2:x",
    ])
    func invalidURLErrorsDoNotShowThePassword(_ url: String) {
        let error = #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        #expect(error?.message.contains("secret") == false, "\(error?.message ?? "")")
        #expect(error?.message.contains("cret") == false, "\(error?.message ?? "")")
    }

    @Test func startsAMQPURLNeedsTheWholeScheme() {
        #expect(AMQPConfiguration.startsAMQPURL("amqp://h"))
        #expect(AMQPConfiguration.startsAMQPURL(" AMQPS://h"))
        #expect(!AMQPConfiguration.startsAMQPURL("amqps{{://h"))
        #expect(!AMQPConfiguration.startsAMQPURL("amqp"))
        #expect(!AMQPConfiguration.startsAMQPURL(""))
    }
}
