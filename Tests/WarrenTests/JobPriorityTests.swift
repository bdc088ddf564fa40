import Foundation
import Testing

@testable import Warren

@Suite("JobPriority")
struct JobPriorityTests {
    @Test func amqpPrioritiesRunFromOneToFive() {
        #expect(JobPriority.veryLow.amqpPriority == 1)
        #expect(JobPriority.low.amqpPriority == 2)
        #expect(JobPriority.normal.amqpPriority == 3)
        #expect(JobPriority.high.amqpPriority == 4)
        #expect(JobPriority.veryHigh.amqpPriority == 5)
        #expect(UInt8(Topology.maxPriority) == JobPriority.veryHigh.amqpPriority)
    }

    @Test(arguments: JobPriority.allCases)
    func amqpPriorityRoundTrips(_ priority: JobPriority) {
        #expect(JobPriority(amqpPriority: priority.amqpPriority) == priority)
    }

    @Test func outOfRangeAMQPPrioritiesClamp() {
        #expect(JobPriority(amqpPriority: 0) == .veryLow)
        #expect(JobPriority(amqpPriority: 6) == .veryHigh)
        #expect(JobPriority(amqpPriority: 9) == .veryHigh)
        #expect(JobPriority(amqpPriority: 255) == .veryHigh)
    }

    @Test func ordersFromVeryLowToVeryHigh() {
        #expect(JobPriority.allCases.sorted() == [.veryLow, .low, .normal, .high, .veryHigh])
        #expect(JobPriority.low < .normal)
        #expect(!(JobPriority.high < .high))
        #expect(JobPriority.veryHigh > .high)
    }

    @Test func mapsToTheMatchingOperationQueuePriority() {
        #expect(JobPriority.veryLow.queuePriority == .veryLow)
        #expect(JobPriority.low.queuePriority == .low)
        #expect(JobPriority.normal.queuePriority == .normal)
        #expect(JobPriority.high.queuePriority == .high)
        #expect(JobPriority.veryHigh.queuePriority == .veryHigh)
    }
}
