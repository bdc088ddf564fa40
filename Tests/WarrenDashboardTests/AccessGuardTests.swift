import Foundation
import Hummingbird
import Testing

@testable import WarrenDashboard

@Suite struct AccessGuardTests {
    typealias Guard = AccessGuard<BasicRequestContext>

    @Test func basicAuthWithAnyUserOrABearerToken() {
        let basic = "Basic " + Data("anyone:s3cret".utf8).base64EncodedString()
        #expect(Guard.carries("s3cret", basic))
        #expect(Guard.carries("s3cret", "Bearer s3cret"))
        #expect(!Guard.carries("s3cret", "Bearer s3cre"))
        #expect(!Guard.carries("s3cret", "Basic " + Data("s3cret:".utf8).base64EncodedString()))
        #expect(!Guard.carries("s3cret", "Basic !!!"))
        #expect(!Guard.carries("s3cret", nil))
    }

    @Test func constantTimeComparison() {
        #expect(Guard.constantTimeEqual("abc", "abc"))
        #expect(!Guard.constantTimeEqual("abc", "abd"))
        #expect(!Guard.constantTimeEqual("abc", "abcd"))
        #expect(!Guard.constantTimeEqual("", "a"))
    }

    @Test func loopbackNeedsNoCredentialAnythingElseDoes() throws {
        #expect(Dashboard.isLoopback("127.0.0.1") && Dashboard.isLoopback("localhost") && Dashboard.isLoopback("::1"))
        #expect(!Dashboard.isLoopback("0.0.0.0") && !Dashboard.isLoopback("192.0.2.1"))
        var configuration = Dashboard.Configuration(url: "amqp://guest:guest@localhost/%2F")
        configuration.host = "0.0.0.0"
        #expect(throws: (any Error).self) { try Dashboard(configuration: configuration) }
        configuration.credential = "secret"
        #expect(throws: Never.self) { try Dashboard(configuration: configuration) }
        configuration.credential = ""
        #expect(throws: (any Error).self) { try Dashboard(configuration: configuration) }
    }
}
