import Testing

@testable import AMQP

@Suite("MessageProperties")
struct MessagePropertiesTests {
    private func roundTrip(_ properties: MessageProperties) -> MessageProperties {
        let arena = CArena()
        return MessageProperties(properties.encoded(in: arena))
    }

    @Test func noPropertiesStayAbsent() {
        #expect(roundTrip(MessageProperties()) == MessageProperties())
    }

    @Test func everyPropertyRoundTrips() {
        let properties = MessageProperties(
            contentType: "application/json", contentEncoding: "utf-8",
            headers: ["x-warren-attempt": .int(2), "x-warren-dead-reason": "invalidInput"], persistent: true,
            priority: 5, correlationID: "job-1", replyTo: "amq.rabbitmq.reply-to", expiration: "60000",
            messageID: "m-1", timestamp: 1_700_000_000, type: "sum", userID: "guest", appID: "warren")
        #expect(roundTrip(properties) == properties)
    }

    @Test func transientDeliveryModeRoundTrips() {
        let properties = MessageProperties(persistent: false, priority: 0)
        let decoded = roundTrip(properties)
        #expect(decoded.persistent == false)
        #expect(decoded.priority == 0)
        #expect(decoded.contentType == nil)
    }

    @Test func emptyHeadersRoundTripAsEmpty() {
        #expect(roundTrip(MessageProperties(headers: [:])).headers == [:])
    }
}
