import Foundation
import Synchronization
import Testing
import Warren
import WarrenTesting

@Suite("TestJob")
struct TestJobTests {
    @Test func runsTheRegisteredCodeAsAWorkerWould() async throws {
        let job = try TestJob(Add.self, .init(numbers: [1, 2, 3]), key: "totals", sequence: 7)
        #expect(try await job.run(in: .testing) == .succeeded(Add.Output(sum: 6)))
        #expect(job.context.key == "totals")
        #expect(job.context.sequence == 7)
    }

    @Test func handsTheHandlerItsDependenciesOutputs() async throws {
        let first = try JobResult.succeeded(jobID: "first", type: "add", output: Add.Output(sum: 10))
        let second = try JobResult.succeeded(jobID: "second", type: "add", output: Add.Output(sum: 20))
        let job = try TestJob(Add.self, .init(numbers: [1]), dependencyResults: [first, second])
        #expect(job.context.dependencies == ["first", "second"])
        #expect(try await job.run(in: .testing) == .succeeded(Add.Output(sum: 31)))
    }

    @Test func aCancelWhileItRunsEndsItCancelled() async throws {
        let job = try TestJob(Spin.self, .init())
        async let outcome = job.run(in: .testing)
        for await report in job.progressUpdates where report.fraction > 0 {
            job.cancel()
            break
        }
        #expect(try await outcome.cancellation == .requested)
        #expect(job.isCancelled)
    }

    @Test func aCancelBeforeItRunsMeansItsCodeNeverRuns() async throws {
        let ran = Atomic(false)
        var registry = OperationRegistry()
        registry.register(
            Add.self,
            blocking: { input, _ in
                ran.store(true, ordering: .relaxed)
                return Add.Output(sum: 0)
            })
        let job = try TestJob(Add.self, .init(numbers: []))
        job.cancel(Cancellation(reason: "superseded", message: "a newer one came"))
        #expect(try await job.run(in: registry).cancellation?.reason == "superseded")
        let didRun = ran.load(ordering: .relaxed)
        #expect(!didRun)
    }

    @Test func everyProgressReportIsKeptInOrder() async throws {
        var registry = OperationRegistry()
        registry.register(
            Add.self,
            blocking: { input, job in
                for (index, _) in input.numbers.enumerated() {
                    job.reportProgress(Double(index + 1) / Double(input.numbers.count), message: "number \(index + 1)")
                }
                return Add.Output(sum: input.numbers.reduce(0, +))
            })
        let job = try TestJob(Add.self, .init(numbers: [1, 2, 3, 4]))
        _ = try await job.run(in: registry)
        #expect(job.progress.map(\.fraction) == [0.25, 0.5, 0.75, 1])
        #expect(job.progress.last?.message == "number 4")
        var followed: [ProgressReport] = []
        for await report in job.progressUpdates { followed.append(report) }
        #expect(followed == job.progress)
    }

    @Test func aDeadlineThatPassedCancelsTheJobBeforeItStarts() async throws {
        let job = try TestJob(Add.self, .init(numbers: [1]), deadline: Date().addingTimeInterval(-1))
        let outcome = try await job.run(in: .testing)
        #expect(outcome.cancellation?.reason == "deadline")
    }

    @Test func aDeadlinePassingWhileItRunsCancelsIt() async throws {
        let job = try TestJob(Spin.self, .init(), deadline: Date().addingTimeInterval(0.2))
        let outcome = try await job.run(in: .testing)
        #expect(outcome.cancellation?.reason == "deadline")
    }

    @Test func aJobRunsOnce() async throws {
        let job = try TestJob(Add.self, .init(numbers: [1]))
        _ = try await job.run(in: .testing)
        let error = await #expect(throws: WarrenError.self) { try await job.run(in: .testing) }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func aTypeNotRegisteredIsNamed() async throws {
        let job = try TestJob(Add.self, .init(numbers: [1]))
        let error = await #expect(throws: WarrenError.self) { try await job.run(in: OperationRegistry()) }
        #expect(error?.message.contains("'add' is not registered") == true)
    }

    @Test func aHandlerCanBeCalledDirectlyWithTheContext() throws {
        let job = try TestJob(Shout.self, .init(text: "hi"), attempt: 2)
        func handler(_ input: Shout.Input, _ context: JobContext) -> String { "\(input.text) \(context.attempt)" }
        #expect(handler(job.input, job.context) == "hi 2")
    }
}
