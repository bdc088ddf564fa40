import Foundation
import Testing

@testable import Warren

@Suite("HeldDeliveries")
struct HeldDeliveriesTests {
    @Test func heldJobsWaitForTheirRetryAndRaiseTheCount() throws {
        let held = HeldDeliveries(logger: WorkerParts.logger)
        #expect(held.nextWake == nil && held.count == 0)
        var tries = 0
        held.hold("the queue is out of reach", [:], WorkerParts.delivery(tag: 4)) { tries += 1 }
        #expect(held.count == 1 && held.held.map(\.delivery.deliveryTag) == [4])
        let wake = try #require(held.nextWake)
        #expect(wake > .now)
        var looked = false
        #expect(try !held.retryIfDue { looked = true })  // not due yet
        #expect(tries == 0 && !looked)
        held.connectionLost()
        #expect(held.count == 0 && held.nextWake == nil)
    }

    @Test func jobsToRequeueLaterGoOnlyOnceDue() {
        let held = HeldDeliveries(logger: WorkerParts.logger)
        held.requeueLater(9)
        #expect(held.dueRequeues().isEmpty && held.nextWake != nil)
        held.connectionLost()
        #expect(held.nextWake == nil)
    }
}
