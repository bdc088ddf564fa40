import Testing

@testable import AMQP

@Suite("AMQPError while a stream starts")
struct AMQPErrorStreamStartingTests {
    /// What RabbitMQ 3.10 answers a declaration of a stream whose member has not restarted yet.
    static let homeNodeDown = AMQPError(
        .channelClosed, "declare queue 'warren.control'", replyCode: 404,
        replyText: "NOT_FOUND - home node 'rabbit@host' of durable queue 'warren.control' in vhost '/' is down or "
            + "inaccessible",
        channel: 100)

    @Test func recognisesTheBrokersAnswersWhileAStreamStarts() {
        #expect(Self.homeNodeDown.isStreamStarting)
        let internalError = AMQPError(.connectionClosed, "closed", replyCode: 541, replyText: "INTERNAL_ERROR")
        #expect(internalError.isStreamStarting)
        let noReplica =
            "PRECONDITION_FAILED - stream queue 'warren.results' in vhost '/' "
            + "does not have a replica on the local node"
        #expect(AMQPError(.channelClosed, "consume", replyCode: 406, replyText: noReplica).isStreamStarting)
        let noQueue = AMQPError(.channelClosed, "declare", replyCode: 404, replyText: "NOT_FOUND - no queue 'jobs'")
        #expect(!noQueue.isStreamStarting)
        let otherArguments = AMQPError(
            .channelClosed, "declare", replyCode: 406, replyText: "PRECONDITION_FAILED - inequivalent arg")
        #expect(!otherArguments.isStreamStarting)
    }

    @Test func triesAgainUntilTheStreamHasStarted() throws {
        var attempts = 0
        let value = try AMQPError.retryingWhileStreamStarts {
            attempts += 1
            if attempts < 3 { throw Self.homeNodeDown }
            return "declared"
        }
        #expect(value == "declared")
        #expect(attempts == 3)
    }

    @Test func anyOtherFailureGoesUpAtOnce() {
        var attempts = 0
        let refused = AMQPError(.channelClosed, "declare", replyCode: 403, replyText: "ACCESS_REFUSED", channel: 100)
        let error = #expect(throws: AMQPError.self) {
            try AMQPError.retryingWhileStreamStarts {
                attempts += 1
                throw refused
            }
        }
        #expect(error?.replyCode == 403)
        #expect(attempts == 1)
    }

    @Test func theLastFailureGoesUpOnceTheTimeIsUp() {
        var attempts = 0
        let error = #expect(throws: AMQPError.self) {
            try AMQPError.retryingWhileStreamStarts(timeout: .zero) {
                attempts += 1
                throw Self.homeNodeDown
            }
        }
        #expect(error?.replyCode == 404)
        #expect(attempts == 1)
    }
}
