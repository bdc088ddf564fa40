import Foundation
import Testing
import Warren
import WarrenTesting

@Suite("Typed operations")
struct TypedOperationTests {
    @Test func aTrailingClosureThatAwaitsIsAsynchronousAndOneThatDoesNotIsBlocking() throws {
        let registry = OperationRegistry.testing
        guard case .asynchronous = try #require(registry[Shout.type]).body else {
            Issue.record("shout should be asynchronous")
            return
        }
        guard case .blocking = try #require(registry[Add.type]).body else {
            Issue.record("add should be blocking")
            return
        }
    }

    @Test func theDefinitionsTypeNameIsTheRegisteredOne() {
        #expect(OperationRegistry.testing.types == ["add", "flaky", "ratio", "shout", "spin"])
    }

    @Test func aTypedJobRunsAndItsOutputComesBackTyped() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let job = try await jobs.enqueue(Shout.self, .init(text: "hello"))
        #expect(try await job.result() == .succeeded(Shout.Output(text: "HELLO")))
        #expect(job.descriptor.type == "shout")
        #expect(job.descriptor.input == ["text": "hello"])
    }

    @Test func inputThatDoesNotDecodeFailsInvalidInputNamingTheTypeAndField() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let descriptor = try await jobs.enqueue(JobRequest(type: "shout", input: ["text": 1]))
        let result = try await jobs.result(of: descriptor.id, timeout: .seconds(60))
        #expect(result.status == .failed)
        #expect(result.error?.code == "invalidInput")
        #expect(result.error?.message == "input does not match operation type 'shout': input.text: expected a string")
    }

    @Test func outputThatNoLongerDecodesThrowsInvalidOutputNamingTheTypeAndField() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let job = try await jobs.enqueue(AddAsText.self, .init(numbers: [1, 2]))
        let error = await #expect(throws: WarrenError.self) { try await job.result() }
        #expect(error?.code == .invalidOutput)
        #expect(error?.message.contains("operation type 'add': output.sum: expected a string") == true)
    }

    @Test func outputJSONCannotHoldFailsInvalidOutputNamingTheField() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let job = try await jobs.enqueue(Ratio.self, .init(numerator: 0, denominator: 0))
        let outcome = try await job.result()
        #expect(outcome.error?.code == "invalidOutput")
        #expect(
            outcome.error?.message
                == "output does not match operation type 'ratio': output.ratio: NaN is not a JSON number")
    }

    @Test func inputJSONCannotHoldIsRefusedBeforeAnythingIsEnqueued() async throws {
        let jobs = try InMemoryJobs(registry: .testing)
        let error = await #expect(throws: WarrenError.self) {
            try await jobs.enqueue(Ratio.self, .init(numerator: .infinity, denominator: 1))
        }
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("operation type 'ratio'") == true)
        #expect(error?.message.contains("input.numerator") == true)
        #expect(jobs.results.isEmpty)
    }

    @Test func getThrowsTheFailureOrTheCancellation() throws {
        let failed = JobOutcome<Int>.failed(JobError(code: "boom", message: "went off"))
        #expect(throws: JobError(code: "boom", message: "went off")) { try failed.get() }
        let cancelled = JobOutcome<Int>.cancelled(.requested)
        #expect(throws: Cancellation.requested) { try cancelled.get() }
        #expect(try JobOutcome<Int>.succeeded(3).get() == 3)
    }

    @Test func aResultReadFromAnywhereDecodesAsItsDefinition() throws {
        let result = try JobResult.succeeded(jobID: "a", type: "add", output: Add.Output(sum: 5))
        #expect(try result.outcome(as: Add.self) == .succeeded(Add.Output(sum: 5)))
        #expect(
            try JobResult.failed(jobID: "b", error: JobError(code: "x", message: "y")).outcome(as: Add.self).error?.code
                == "x")
    }
}
