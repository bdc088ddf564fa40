import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Prefetch {
        @Test(
            "a worker holds at most its prefetch: on its one queue, and after that queue is paused and resumed",
            arguments: [false, true])
        func bound(quorum: Bool) throws {
            let queue = TestEnvironment.uniqueName("prefetch")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let id = TestEnvironment.uniqueName("bounded")
            let worker = try CLI.startWorker(
                queue: queue, id: id,
                arguments: ["--width", "1", "--prefetch", "2"] + (quorum ? ["--quorum-queues"] : []))
            defer { worker.terminate() }
            let jobs = try producer.enqueue(
                (1...6).map { _ in JobRequest(type: "sleep", input: ["seconds": 60], queue: queue) })
            try worker.waitForStart(of: jobs[0].id)
            try BrokerProbe.expectReady(in: queue, 4, "one job executes and one waits in the worker")
            try producer.pause(worker: id)
            try BrokerProbe.expectReady(in: queue, 5, "the waiting job went back; the executing one goes on")
            try producer.resume(worker: id)
            try BrokerProbe.expectReady(in: queue, 4, "the executing job still counts against the prefetch")
            try producer.cancelAll(queue: queue)
            let results = try tap.waitForResults(jobs.map(\.id))
            #expect(results.allSatisfy { $0.status == .cancelled })
            #expect(!worker.stderr.contains("reconnecting"), "\(worker.stderr)")
        }
    }
}
