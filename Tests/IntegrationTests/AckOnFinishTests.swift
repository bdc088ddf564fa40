import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct AckOnFinish {
        @Test("kill -9 of a worker mid-job: the job is redelivered to another worker and completes; nothing is lost")
        func killedWorker() throws {
            let queue = TestEnvironment.uniqueName("kill9")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let first = try CLI.startWorker(queue: queue, id: "doomed", arguments: ["--width", "1"])
            defer { first.terminate() }
            let job = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...20), delayMs: 100), queue: queue))
            try first.waitForStart(of: job.id)
            first.signal(SIGKILL)
            first.waitForExit()
            try tap.settle(for: .milliseconds(300))
            #expect(tap.results(for: job.id).isEmpty, "a killed worker published nothing")

            let second = try CLI.startWorker(queue: queue, id: "survivor")
            defer { second.terminate() }
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .succeeded)
            #expect(result.output?["sum"] == .number(210))
            #expect(result.workerID == "survivor")
            #expect(result.redelivered)
            #expect(result.attempt == 2)
            try tap.settle()
            #expect(tap.results(for: job.id).count == 1)
            #expect(try BrokerProbe.depth(of: queue) == 0)
        }

        @Test(
            "SIGTERM, SIGHUP: the worker lets the executing job finish, requeues what never started, and exits 0",
            arguments: [SIGTERM, SIGHUP])
        func gracefulStop(signal: Int32) throws {
            let queue = TestEnvironment.uniqueName("stop-signal-\(signal)")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "3"])
            defer { worker.terminate() }
            let running = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...10), delayMs: 100), queue: queue))
            let waiting = try producer.enqueue(JobRequest(type: "echo", input: "later", queue: queue))
            try worker.waitForStart(of: running.id)
            worker.signal(signal)
            #expect(worker.waitForExit() == 0)
            #expect(try tap.waitForResult(running.id).status == .succeeded)
            try tap.settle()
            #expect(tap.results(for: waiting.id).isEmpty, "the waiting job was requeued, not run")
            #expect(try BrokerProbe.depth(of: queue) == 1)
            let next = try CLI.startWorker(queue: queue)
            defer { next.terminate() }
            #expect(try tap.waitForResult(waiting.id).status == .succeeded)
        }
    }
}
