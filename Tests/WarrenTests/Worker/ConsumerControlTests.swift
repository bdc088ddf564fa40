import AMQP
import Foundation
import Testing

@testable import Warren

@Suite("ConsumerControl")
struct ConsumerControlTests {
    private func consumers(
        _ change: (inout Worker.Configuration) -> Void = { _ in }
    ) throws -> (ConsumerControl, [Int]) {
        var changes: [Int] = []
        let configuration = WorkerParts.configuration(change)
        let consumers = ConsumerControl(
            link: try WorkerParts.link(), lifecycle: Lifecycle(configuration: configuration),
            configuration: configuration, logger: WorkerParts.logger
        ) { changes.append($0) }
        return (consumers, changes)
    }

    @Test func theQueueOfADeliveryIsTheOnlyOneConsumedOrItsRoutingKey() throws {
        let (single, _) = try consumers { $0.queues = ["a"] }
        #expect(single.queue(of: WorkerParts.delivery(routingKey: "other")) == "a")
        let (several, _) = try consumers { $0.queues = ["a", "b"] }
        #expect(several.queue(of: WorkerParts.delivery(consumerTag: "gone", routingKey: "b")) == "b")
    }

    @Test func pausingAndResumingChangeTheActiveQueuesOnce() throws {
        let (consumers, _) = try consumers { $0.queues = ["a", "b"] }
        #expect(try consumers.setPaused(true, queue: "a"))
        #expect(try !consumers.setPaused(true, queue: "a"))
        #expect(consumers.activeQueues == ["b"] && consumers.pausedQueues == ["a"])
        #expect(try consumers.setPaused(false, queue: "a"))  // not consuming yet: no consumer starts
        #expect(consumers.activeQueues == ["a", "b"])
    }

    @Test func thePrefetchFollowsTheWidthsUnlessTheConfigurationSetsIt() throws {
        let (following, _) = try consumers()
        #expect(following.basePrefetch == 2)
        #expect(following.widthsChanged(to: 7) && following.basePrefetch == 7)
        let (fixed, _) = try consumers { $0.prefetch = 3 }
        #expect(!fixed.widthsChanged(to: 7) && fixed.basePrefetch == 3)
    }

    @Test func aConsumerTheBrokerCancelsMakesItsQueueUnreachableAndOthersAreNotJobConsumers() throws {
        let (consumers, _) = try consumers()
        #expect(consumers.consumerCancelled("unknown") == nil)
        #expect(consumers.nextWake == nil)
        // Declaring a queue reaches for the broker.
        #expect(throws: AMQPError.self) { try consumers.declareJobQueue("q") }
    }
}
