import Foundation
import Testing

@testable import Warren

@Suite("LocalQueues")
struct LocalQueuesTests {
    @Test func operationsOfATurnReachTheirQueueOnlyWhenItIsHandedOver() throws {
        let queues = LocalQueues(widths: ["default": 1, "io": 3])
        #expect(queues.totalWidth == 4 && queues["io"]?.width == 3 && queues["nope"] == nil)
        queues["default"]!.isSuspended = true
        let job = WorkerParts.job("a")
        queues.add(job)
        #expect(job.isQueued && queues["default"]!.operationCount == 0)
        #expect(queues.isIdle(jobs: [job]))  // held back this turn
        queues.handOver()
        #expect(queues["default"]!.operationCount == 1)
        #expect(!queues.isIdle(jobs: [job]))
        job.operation.cancel(Cancellation(reason: "test", message: "done"))
        queues["default"]!.isSuspended = false
    }

    @Test func aJobThatRunsAloneGoesToItsQueueAtOnce() {
        let queues = LocalQueues(widths: ["default": 1])
        queues["default"]!.isSuspended = true
        let job = WorkerParts.job("alone")
        job.runsAlone = true
        queues.add(job)
        #expect(queues["default"]!.operationCount == 1)
        job.operation.cancel(Cancellation(reason: "test", message: "done"))
        queues["default"]!.isSuspended = false
    }
}
