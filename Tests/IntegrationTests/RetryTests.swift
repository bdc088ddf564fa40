import AMQP
import Foundation
import Testing
import Warren

extension Integration {
    @Suite struct Retries {
        @Test("a retryable failure runs again after a backoff, and succeeds on a later attempt: one result")
        func retriedUntilSuccess() throws {
            let queue = TestEnvironment.uniqueName("retry")
            defer { BrokerProbe.delete(queue) }
            let tap = try MessageTap.results()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try Producer.forTests().enqueue(
                JobRequest(type: "fail", input: ["retryable": true, "succeedFromAttempt": 3], queue: queue, maxAttempts: 5))
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .succeeded)
            #expect(result.attempt == 3)
            #expect(result.output?["attempt"] == 3)
            try tap.settle()
            #expect(tap.results(for: job.id).count == 1, "attempts that are retried publish no result")
            #expect(worker.stderr.components(separatedBy: "job failed; retrying").count - 1 == 2)
        }

        @Test("the last retryable failure is dead-lettered; warren dead list shows it and dead requeue replays it")
        func exhaustedThenRequeued() throws {
            let queue = TestEnvironment.uniqueName("exhaust")
            defer { BrokerProbe.delete(queue) }
            let url = try TestEnvironment.brokerURL
            let tap = try MessageTap.results()
            let dead = try MessageTap.deadLetters()
            let worker = try CLI.startWorker(queue: queue)
            defer { worker.terminate() }
            let job = try Producer.forTests().enqueue(
                JobRequest(type: "fail", input: ["retryable": true, "code": "flaky", "succeedFromAttempt": 4], queue: queue, maxAttempts: 2))
            let result = try tap.waitForResult(job.id)
            #expect(result.status == .failed)
            #expect(result.error?.code == "flaky")
            #expect(result.attempt == 2)
            try dead.read(timeout: .seconds(30)) { $0.contains { $0.properties.messageID == job.id } }

            let list = try CLI.run(["dead", "list", "--url", url])
            #expect(list.status == 0, "\(list.stderr)")
            let line = try #require(list.stdout.split(separator: "\n").first { $0.hasPrefix(job.id) })
            #expect(line.contains("reason=flaky"))
            #expect(line.contains("queue=\(queue)"))
            #expect(line.contains("type=fail"))
            let again = try CLI.run(["dead", "list", "--url", url])
            #expect(again.stdout.contains(job.id), "listing keeps the letters")

            let requeue = try CLI.run(["dead", "requeue", job.id, "--url", url])
            #expect(requeue.status == 0, "\(requeue.stderr)")
            #expect(requeue.stdout.contains("requeued \(job.id) to \(queue)"))
            // Replayed with a fresh attempt count: attempts 1 and 2 fail again, and it is dead-lettered again.
            try tap.read(timeout: .seconds(60)) { _ in tap.results(for: job.id).count == 2 }
            #expect(tap.results(for: job.id).map(\.attempt) == [2, 2])
            let after = try CLI.run(["dead", "list", "--url", url])
            #expect(after.stdout.components(separatedBy: job.id).count - 1 == 1, "one letter for the job, not two")

            let missing = try CLI.run(["dead", "requeue", "no-such-job", "--url", url])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("no dead letter for job no-such-job"))
        }
    }
}
