import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Cancellations {
        @Test("an executing operation sees it is cancelled and ends early with one cancelled result")
        func executing() throws {
            let queue = TestEnvironment.uniqueName("cancel-executing")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1"])
            defer { worker.terminate() }
            let job = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...300), delayMs: 100), queue: queue))
            try worker.waitForStart(of: job.id)
            try producer.cancel(jobIDs: [job.id])
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .cancelled)
            #expect(result.cancellation?.reason == "requested")
            #expect(result.timings.startedAt != nil, "it was executing when cancelled")
            try tap.settle()
            #expect(tap.results(for: job.id).count == 1)
            #expect(try BrokerProbe.depth(of: queue) == 0, "the delivery was acknowledged")
        }

        @Test("an operation waiting in a local queue never starts, and ends cancelled")
        func waitingLocally() throws {
            let queue = TestEnvironment.uniqueName("cancel-waiting")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "5"])
            defer { worker.terminate() }
            let blocker = try producer.enqueue(JobRequest(type: "sleep", input: ["seconds": 30], queue: queue))
            try worker.waitForStart(of: blocker.id)
            let waiting = try producer.enqueue(JobRequest(type: "echo", input: "never", queue: queue))
            try producer.cancel(jobIDs: [waiting.id])
            let result = try tap.waitForResult(waiting.id)
            #expect(result.status == .cancelled)
            #expect(result.timings.startedAt == nil, "it never started")
            try producer.cancel(jobIDs: [blocker.id])
            #expect(try tap.waitForResult(blocker.id).status == .cancelled)
            try tap.settle()
            #expect(tap.results(for: waiting.id).count == 1)
            #expect(!worker.logsStart(of: waiting.id))
        }

        @Test("a job still in the broker is not run when delivered, and ends cancelled")
        func inBroker() throws {
            let queue = TestEnvironment.uniqueName("cancel-broker")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "1", "--prefetch", "1"])
            defer { worker.terminate() }
            let blocker = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...10), delayMs: 200), queue: queue))
            try worker.waitForStart(of: blocker.id)
            let queued = try producer.enqueue(JobRequest(type: "echo", input: "never", queue: queue))
            try producer.cancel(jobIDs: [queued.id])
            let results = try tap.waitForResults([blocker.id, queued.id])
            #expect(results.map(\.status) == [.succeeded, .cancelled])
            #expect(results[1].timings.startedAt == nil)
            #expect(!worker.logsStart(of: queued.id))
            try tap.settle()
            #expect(tap.results(for: queued.id).count == 1)
            #expect(try BrokerProbe.depth(of: queue) == 0)
        }

        @Test("a worker started after the cancellation was sent still does not run the job")
        func beforeAnyWorker() throws {
            let queue = TestEnvironment.uniqueName("cancel-late")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let job = try producer.enqueue(JobRequest(type: "echo", input: "never", queue: queue))
            let other = try producer.enqueue(JobRequest(type: "echo", input: "runs", queue: queue))
            try producer.cancel(jobIDs: [job.id])
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let results = try tap.waitForResults([job.id, other.id])
            #expect(results.map(\.status) == [.cancelled, .succeeded])
        }

        @Test("enqueue --supersede cancels the older job of the key, which ends cancelled as superseded")
        func supersede() throws {
            let queue = TestEnvironment.uniqueName("supersede")
            defer { BrokerProbe.delete(queue) }
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue, arguments: ["--width", "2"])
            defer { worker.terminate() }
            let key = TestEnvironment.uniqueName("list")
            let old = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers(Array(1...300), delayMs: 100), key: key, queue: queue))
            try worker.waitForStart(of: old.id)
            let new = try producer.enqueue(
                JobRequest(type: "sum", input: .numbers([1, 2, 3]), key: key, supersede: true, queue: queue))
            let results = try tap.waitForResults([old.id, new.id])
            #expect(results[0].status == .cancelled)
            #expect(results[0].cancellation?.reason == "superseded")
            #expect(results[1].status == .succeeded)
            #expect(results[1].output?["sum"] == .number(6))
            #expect(new.sequence > old.sequence)
        }

        @Test("a superseding job the broker refuses supersedes nothing: the older job of its key runs")
        func refusedSupersedeCancelsNothing() throws {
            let queue = TestEnvironment.uniqueName("supersede-kept")
            let full = TestEnvironment.uniqueName("supersede-full")
            defer { [queue, full].forEach(BrokerProbe.delete) }
            let connection = try AMQPConnection(configuration: AMQPConfiguration(url: try TestEnvironment.brokerURL))
            defer { connection.close() }
            try connection.openChannel(1)
            try connection.declareQueue(
                full, arguments: ["x-max-length": .int(0), "x-overflow": "reject-publish"], channel: 1)
            let producer = try Producer.forTests()
            let tap = try MessageTap.results()
            let key = TestEnvironment.uniqueName("kept")
            let old = try producer.enqueue(JobRequest(type: "echo", input: "old", key: key, queue: queue))
            let error = #expect(throws: WarrenError.self) {
                try producer.enqueue(JobRequest(type: "echo", input: "new", key: key, supersede: true, queue: full))
            }
            #expect(error?.message.contains("not enqueued") == true, "\(String(describing: error))")
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let results = try tap.waitForResults([old.id])
            #expect(results.map(\.status) == [.succeeded], "\(results)")
        }
    }
}
