import Foundation
import Synchronization
import Testing
import Warren
import WarrenTesting

@Suite("InMemoryJobs")
struct InMemoryJobsTests {
    private let timeout = Duration.seconds(60)

    @Test func resultsCarryKeysAndSequenceNumbersThatCountUp() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let first = try await jobs.enqueue(Add.self, .init(numbers: [1]), options: JobOptions(key: "k"))
        let second = try await jobs.enqueue(Add.self, .init(numbers: [2]), options: JobOptions(key: "k"))
        #expect(second.sequence > first.sequence)
        let result = try await jobs.result(of: second.id, timeout: timeout)
        #expect(result.key == "k")
        #expect(result.sequence == second.sequence)
        #expect(result.jobID == second.id)
        #expect(result.attempt == 1)
        #expect(result.workerID == "in-memory")
        await jobs.waitUntilIdle()
        var filter = StaleResultFilter()
        let newest = jobs.results.sorted { $0.sequence > $1.sequence }.filter { filter.judge($0) == .current }
        #expect(newest.map(\.jobID) == [second.id])
    }

    @Test func supersedingCancelsTheOlderJobsOfTheKeyBeforeTheyStart() async throws {
        let ran = Mutex<[Int]>([])
        var registry = OperationRegistry()
        registry.register(
            Add.self,
            blocking: { input, _ in
                ran.withLock { $0.append(contentsOf: input.numbers) }
                return Add.Output(sum: input.numbers.reduce(0, +))
            })
        let jobs = try InMemoryJobs(registry: registry)
        jobs.suspend()
        let old = try await jobs.enqueue(Add.self, .init(numbers: [1]), options: JobOptions(key: "total"))
        let other = try await jobs.enqueue(Add.self, .init(numbers: [5]), options: JobOptions(key: "other"))
        let new = try await jobs.enqueue(
            Add.self, .init(numbers: [2]), options: JobOptions(key: "total", supersede: true))
        #expect(try await old.result().cancellation?.reason == "superseded")
        jobs.resume()
        #expect(try await new.result() == .succeeded(Add.Output(sum: 2)))
        #expect(try await other.result() == .succeeded(Add.Output(sum: 5)))
        #expect(ran.withLock { $0.sorted() } == [2, 5])
    }

    @Test func aCancelledJobThatWaitedNeverRuns() async throws {
        let ran = Atomic(false)
        var registry = OperationRegistry()
        registry.register(
            Add.self,
            blocking: { _, _ in
                ran.store(true, ordering: .relaxed)
                return Add.Output(sum: 0)
            })
        let jobs = try InMemoryJobs(registry: registry)
        jobs.suspend()
        let job = try await jobs.enqueue(Add.self, .init(numbers: [1]))
        try await job.cancel()
        jobs.resume()
        #expect(try await job.result() == .cancelled(.requested))
        await jobs.waitUntilIdle()
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }

    @Test func aRunningJobSeesItsCancellation() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let job = try await jobs.enqueue(Spin.self, .init())
        while jobs.progress(of: job.id) == nil { await Task.yield() }
        try await job.cancel()
        #expect(try await job.result().cancellation == .requested)
    }

    @Test func anIDCancelledBeforeItIsEnqueuedEndsCancelledWhenItIs() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        try await jobs.cancel(jobIDs: ["later"])
        let job = try await jobs.enqueue(Add.self, .init(numbers: [1]), options: JobOptions(id: "later"))
        #expect(try await job.result() == .cancelled(.requested))
    }

    @Test func aJobWaitsForItsDependenciesAndGetsTheirOutputs() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        jobs.suspend()
        let left = try await jobs.enqueue(Add.self, .init(numbers: [1, 2]))
        let right = try await jobs.enqueue(Add.self, .init(numbers: [3]))
        let total = try await jobs.enqueue(
            Add.self, .init(numbers: [100]), options: JobOptions(dependencies: [left.id, right.id]))
        jobs.resume()
        #expect(try await total.result() == .succeeded(Add.Output(sum: 106)))
        await jobs.waitUntilIdle()
        let order = jobs.results.map(\.jobID)
        #expect(order.firstIndex(of: total.id)! > order.firstIndex(of: left.id)!)
        #expect(order.firstIndex(of: total.id)! > order.firstIndex(of: right.id)!)
    }

    @Test func aJobThatRequiresSuccessEndsCancelledWhenADependencyFailed() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let failing = try await jobs.enqueue(Flaky.self, .init(succeedFrom: 99), options: JobOptions(maxAttempts: 1))
        let dependent = try await jobs.enqueue(
            Add.self, .init(numbers: [1]), options: JobOptions(dependencies: [failing.id], requireSuccess: true))
        let outcome = try await dependent.result()
        #expect(outcome.cancellation?.reason == "dependency")
        #expect(outcome.cancellation?.message == "dependency \(failing.id) ended failed, and the job requires success")
    }

    @Test func cyclesAndUnknownDependenciesAreRefusedAndNothingIsEnqueued() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let cycle = [
            JobRequest(type: "add", input: ["numbers": []], dependencies: ["b"], id: "a"),
            JobRequest(type: "add", input: ["numbers": []], dependencies: ["a"], id: "b"),
        ]
        let cycleError = await #expect(throws: WarrenError.self) { try await jobs.enqueue(cycle) }
        #expect(cycleError?.message.hasPrefix("dependency cycle:") == true)
        let unknown = await #expect(throws: WarrenError.self) {
            try await jobs.enqueue(Add.self, .init(numbers: []), options: JobOptions(dependencies: ["nobody"]))
        }
        #expect(unknown?.message.contains("depends on unknown job nobody") == true)
        #expect(jobs.results.isEmpty)
        await jobs.waitUntilIdle()
    }

    @Test func aRetryableFailureRunsAgainUpToItsAttempts() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let job = try await jobs.enqueue(Flaky.self, .init(succeedFrom: 3))
        #expect(try await job.result() == .succeeded(Flaky.Output(attempt: 3)))
        let never = try await jobs.enqueue(Flaky.self, .init(succeedFrom: 9), options: JobOptions(maxAttempts: 2))
        let result = try await jobs.result(of: never.id, timeout: timeout)
        #expect(result.status == .failed)
        #expect(result.attempt == 2)
    }

    @Test func aJobOfAnUnknownTypeFailsUnknownType() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let descriptor = try await jobs.enqueue(JobRequest(type: "resize"))
        let result = try await jobs.result(of: descriptor.id, timeout: timeout)
        #expect(result.error?.code == "unknownType")
    }

    @Test func aUniqueJobWhoseKeyIsHeldIsRefused() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        jobs.suspend()
        let options = JobOptions(key: "nightly", uniqueFor: .seconds(600))
        _ = try await jobs.enqueue(Add.self, .init(numbers: [1]), options: options)
        let error = await #expect(throws: WarrenError.self) {
            try await jobs.enqueue(Add.self, .init(numbers: [2]), options: options)
        }
        #expect(error?.code == .duplicate)
        jobs.resume()
        await jobs.waitUntilIdle()
        _ = try await jobs.enqueue(Add.self, .init(numbers: [3]), options: options)
    }

    @Test func aTimeLimitFailsAJobThatRunsLonger() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let job = try await jobs.enqueue(Spin.self, .init(), options: JobOptions(timeLimit: .milliseconds(50)))
        #expect(try await job.result().error?.code == "timeLimit")
    }

    @Test func aResultThatDoesNotComeInTimeThrowsTimeout() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        jobs.suspend()
        let job = try await jobs.enqueue(Add.self, .init(numbers: [1]))
        let error = await #expect(throws: WarrenError.self) { try await job.result(timeout: .milliseconds(10)) }
        #expect(error?.code == .timeout)
        jobs.resume()
        #expect(try await job.result() == .succeeded(Add.Output(sum: 1)))
    }

    @Test func anUnknownJobAndAReplyQueueAreRefused() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        await #expect(throws: WarrenError.self) { try await jobs.result(of: "nobody", timeout: timeout) }
        let error = await #expect(throws: WarrenError.self) {
            try await jobs.enqueue(JobRequest(type: "add", replyTo: "mine"))
        }
        #expect(error?.message.contains("reply queue") == true)
    }

    @Test func aLocalQueueTheRegistryNeedsMustExist() {
        var registry = OperationRegistry()
        registry.register(Add.self, on: "cpu", blocking: { _, _ in Add.Output(sum: 0) })
        #expect(throws: WarrenError.self) { try InMemoryJobs(registry: registry) }
        #expect(throws: Never.self) { try InMemoryJobs(registry: registry, localQueues: ["cpu": 1]) }
    }

    @Test func codeWrittenForAnyProducerTakesTheInMemoryOne() async throws {
        func shout(_ text: String, with producer: some JobProducer) async throws -> String {
            try await producer.enqueue(Shout.self, .init(text: text)).result().get().text
        }
        #expect(try await shout("quiet", with: InMemoryJobs(registry: .testing)) == "QUIET")
    }
}
