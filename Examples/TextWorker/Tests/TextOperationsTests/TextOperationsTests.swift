import Testing
import TextOperations
import Warren
import WarrenTesting

/// The text operations, run as a worker runs them, without a broker.
@Suite struct TextOperationsTests {
    private var registry: OperationRegistry {
        var registry = OperationRegistry()
        registry.registerTextOperations()
        return registry
    }

    @Test func wordcountCountsWordsLinesAndCharacters() async throws {
        let job = try TestJob(WordCount.self, .init(text: "a b\nc"))
        let counts = try await job.run(in: registry).get()
        #expect(counts == WordCount.Output(words: 3, lines: 2, characters: 5))
    }

    @Test func wordcountStopsWhenCancelled() async throws {
        let job = try TestJob(WordCount.self, .init(text: "a\nb"))
        job.cancel()
        #expect(try await job.run(in: registry) == .cancelled(.requested))
    }

    @Test func shoutUpperCases() async throws {
        let job = try TestJob(Shout.self, .init(text: "hello, warren"))
        #expect(try await job.run(in: registry) == .succeeded(Shout.Output(text: "HELLO, WARREN")))
    }

    @Test func anAddressThatIsNoAddressFailsInvalidEmail() async throws {
        let job = try TestJob(EmailValidation.self, .init(email: "nobody"))
        let outcome = try await job.run(in: registry)
        #expect(outcome.error?.code == EmailValidation.invalidEmail)
        #expect(outcome.error?.message == "'nobody' is not an email address: it has no '@'")
    }

    @Test func aHandlerCanBeCalledDirectly() throws {
        let job = try TestJob(EmailValidation.self, .init(email: "somebody@example.com"))
        let parts = try EmailValidation.run(job.input, job: job.context)
        #expect(parts == EmailValidation.Output(local: "somebody", domain: "example.com"))
    }

    @Test func jobsEnqueuedInMemoryRunWithTheirKeysAndSequences() async throws {
        let jobs = try InMemoryJobs(registry: registry, localQueues: ["default": 2, "cpu": 2])
        jobs.suspend()
        let first = try await jobs.enqueue(Shout.self, .init(text: "first"), options: JobOptions(key: "greeting"))
        let second = try await jobs.enqueue(
            Shout.self, .init(text: "second"), options: JobOptions(key: "greeting", supersede: true))
        jobs.resume()
        #expect(try await first.result().cancellation?.reason == "superseded")
        #expect(try await second.result() == .succeeded(Shout.Output(text: "SECOND")))
        #expect(second.sequence > first.sequence)
    }

    @Test func demoTypesAreNotRegistered() async throws {
        let jobs = try InMemoryJobs(registry: registry, localQueues: ["default": 1, "cpu": 1])
        let sum = try await jobs.enqueue(JobRequest(type: "sum", input: ["numbers": [1, 2]]))
        #expect(try await jobs.result(of: sum.id, timeout: .seconds(60)).error?.code == "unknownType")
    }
}
