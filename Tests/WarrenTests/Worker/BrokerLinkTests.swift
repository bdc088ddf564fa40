import AMQP
import Foundation
import Testing

@testable import Warren

@Suite("BrokerLink, DeadLettering, DeadLetterWatch, UniqueLockReleaser")
struct BrokerLinkTests {
    @Test func theBrokersLargestMessageIsLearntFromItsRefusalOnlyWhenSmaller() throws {
        let link = try WorkerParts.link()
        #expect(link.maxMessageBytes == 128 << 20)
        let refusal = AMQPError(
            .channelClosed, "closed", replyCode: 406,
            replyText: "PRECONDITION_FAILED - message size 2000 is larger than configured max size 1024")
        #expect(link.learnMaxMessageSize(from: refusal))
        #expect(link.maxMessageBytes == 1024)
        #expect(!link.learnMaxMessageSize(from: refusal))
        #expect(!link.learnMaxMessageSize(from: AMQPError(.connectionLost, "gone")))
        let generation = link.generation
        link.replace(with: AMQPConnection(unconnected: try AMQPConfiguration(url: WorkerParts.url)))
        #expect(link.generation == generation + 1)
    }

    @Test func aRefusedDeadLetterHoldsItsJob() throws {
        let link = try WorkerParts.link()
        let settlements = Settlements(
            link: link, logger: WorkerParts.logger, metrics: WorkerMetrics(operationTypes: []))
        let held = HeldDeliveries(logger: WorkerParts.logger)
        let configuration = WorkerParts.configuration()
        let deadLetters = DeadLettering(
            link: link, settlements: settlements,
            locks: UniqueLockReleaser(
                link: link, logger: WorkerParts.logger, metrics: WorkerMetrics(operationTypes: [])),
            held: held,
            consumers: ConsumerControl(
                link: link, lifecycle: Lifecycle(configuration: configuration), configuration: configuration,
                logger: WorkerParts.logger
            ) { _ in },
            metrics: WorkerMetrics(operationTypes: []), quorumQueues: false)
        deadLetters.letterRefused(WorkerParts.delivery(tag: 5), error: JobError(code: "x", message: "y"))
        #expect(held.count == 1 && held.held[0].delivery.deliveryTag == 5)
    }

    @Test func aJobWithoutALockReleasesNothingAndTheBrokersReasonsAreExplained() throws {
        let link = try WorkerParts.link()
        let locks = UniqueLockReleaser(
            link: link, logger: WorkerParts.logger, metrics: WorkerMetrics(operationTypes: []))
        try locks.release(nil)
        #expect(locks.nextWake == nil)
        #expect(DeadLetterWatch.explanation(ofBrokerReason: "expired").contains("time to live"))
        #expect(DeadLetterWatch.explanation(ofBrokerReason: "maxlen").contains("max-length"))
        #expect(DeadLetterWatch.explanation(ofBrokerReason: "other").contains("documentation"))
    }
}
