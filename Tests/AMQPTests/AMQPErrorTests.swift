import Testing

@testable import AMQP

@Suite("AMQPError")
struct AMQPErrorTests {
    @Test func descriptionIsTheMessageAlone() {
        #expect(AMQPError(.connectionFailed, "cannot reach broker:5672").description == "cannot reach broker:5672")
    }

    @Test func descriptionAddsTheBrokersReply() {
        let error = AMQPError(
            .channelClosed, "queue declare failed", replyCode: 406, replyText: "PRECONDITION_FAILED - inequivalent arg",
            channel: 1)
        #expect(error.description == "queue declare failed (broker replied 406 PRECONDITION_FAILED - inequivalent arg)")
        #expect(error.channel == 1)
    }

    @Test func codesCompareByName() {
        #expect(AMQPError.Code.invalidURL == AMQPError.Code("invalidURL"))
        #expect(AMQPError.Code.library.description == "library")
        #expect(AMQPError.Code.connectionLost != .connectionClosed)
    }
}

@Suite struct AMQPErrorMessageSizeTests {
    @Test func aChannelClosedForAMessageTooLargeNamesTheBrokersLimit() {
        let error = AMQPError(
            .channelClosed, "cannot publish", replyCode: 406,
            replyText: "PRECONDITION_FAILED - message size 1048759 is larger than configured max size 1048576",
            channel: 1)
        #expect(error.brokerMaxMessageSize == 1_048_576)
        let other = AMQPError(.channelClosed, "x", replyCode: 406, replyText: "PRECONDITION_FAILED - inequivalent arg")
        #expect(other.brokerMaxMessageSize == nil)
    }
}
