import Foundation
import Testing

@testable import Warren

@Suite("Dependency results")
struct DependencyResultsTests {
    private func result(_ id: String, _ status: JobStatus = .succeeded, output: JSONValue? = nil) -> JobResult {
        JobResult(
            jobID: id, type: "sum", sequence: 1, key: nil, status: status, output: output, workerID: "w",
            timings: JobTimings())
    }

    /// A `sum` job depending on `dependencies`, handed `results` as a worker hands them, run on `input`.
    private func runSum(
        _ input: String, dependencies: [String], results: [JobResult]
    ) throws -> JSONValue {
        let descriptor = OperationDescriptor(
            type: "sum", input: try .parse(input), sequence: 1, dependencies: dependencies)
        let job = JobContext(descriptor: descriptor, attempt: 1, logger: TestJobs.logger)
        job.receiveDependencyResults(Dictionary(uniqueKeysWithValues: results.map { ($0.jobID, $0) }))
        guard case .blocking(let code) = try #require(OperationRegistry.demo["sum"]).body else {
            throw JobError(code: "test", message: "sum is blocking")
        }
        return try code(descriptor.input, job)
    }

    @Test func theContextListsResultsInTheDescriptorsOrderLeavingOutThoseNotRead() {
        let descriptor = OperationDescriptor(type: "t", sequence: 1, dependencies: ["b", "a", "c"])
        let job = JobContext(descriptor: descriptor, attempt: 1, logger: TestJobs.logger)
        #expect(job.dependencies == ["b", "a", "c"])
        #expect(job.dependencyResults.isEmpty)
        job.receiveDependencyResults(["a": result("a"), "b": result("b", .failed)])
        #expect(job.dependencyResults.map(\.jobID) == ["b", "a"])
        #expect(job.dependencyResult(of: "b")?.status == .failed)
        #expect(job.dependencyResult(of: "c") == nil)
        #expect(job.dependencyResult(of: "elsewhere") == nil)
    }

    @Test func sumAddsItsDependenciesSumsAfterItsNumbers() throws {
        let output = try runSum(
            #"{"numbers": [100], "addDependencySums": true}"#, dependencies: ["a", "b"],
            results: [
                result("a", output: ["sum": 6, "formattedSum": "6"]), result("b", output: ["sum": .integer(15)]),
            ])
        #expect(output["sum"] == .number(121))
        let alone = try runSum(
            #"{"addDependencySums": true}"#, dependencies: ["a"], results: [result("a", output: ["sum": -4])])
        #expect(alone["sum"] == .number(-4), "numbers may be left out with addDependencySums")
    }

    @Test func sumIgnoresItsDependenciesWithoutTheFlag() throws {
        let output = try runSum(#"{"numbers": [1]}"#, dependencies: ["a"], results: [result("a", output: ["sum": 6])])
        #expect(output["sum"] == .number(1))
        #expect(throws: JobError.self) { try runSum(#"{}"#, dependencies: [], results: []) }
    }

    @Test func sumFailsNamingADependencyWithoutAUsableSum() throws {
        let cases: [(JobResult?, String)] = [
            (result("a", .failed), "dependency a ended failed"),
            (result("a", output: ["total": 6]), "dependency a succeeded without an integer 'sum' in its output"),
            (result("a", output: ["sum": 1.5]), "dependency a succeeded without an integer 'sum' in its output"),
            (nil, "the result of dependency a could not be read"),
        ]
        for (dependency, message) in cases {
            let error = #expect(throws: JobError.self) {
                try runSum(#"{"addDependencySums": true}"#, dependencies: ["a"], results: dependency.map { [$0] } ?? [])
            }
            #expect(error?.code == "dependencyOutput")
            #expect(error?.message == message)
        }
    }

    @Test func sumNamesTheDependencyWhoseSumOverflows() throws {
        let error = #expect(throws: JobError.self) {
            try runSum(
                #"{"numbers": [1], "addDependencySums": true}"#, dependencies: ["big"],
                results: [result("big", output: ["sum": .integer(Int64.max)])])
        }
        #expect(error?.message == "the sum of dependency big: the sum leaves the 64-bit integer range")
    }

    @Test func fetchesReadEachOffsetOnceForEveryJobWantingIt() {
        var fetches = ResultFetches()
        for (job, offset) in [("a", 7), ("b", 7), ("a", 7), ("c", 9)] { fetches.want(job, at: UInt64(offset)) }
        #expect(fetches.nextRead() == 7)
        #expect(fetches.nextRead() == 9, "a second job's result at the same offset comes with the same read")
        #expect(fetches.nextRead() == nil)
        fetches.started("tag-7", reading: 7)
        fetches.started("tag-9", reading: 9)
        #expect(fetches.offset(readBy: "tag-7") == 7)
        #expect(fetches.offset(readBy: "jobs") == nil)
        let wanted = fetches.finish("tag-7")
        #expect(wanted == ["a", "b"])
        #expect(fetches.offset(readBy: "tag-7") == nil)
        let late = fetches.finish("tag-7")
        #expect(late.isEmpty, "a late delivery of a finished fetch wants nothing")
        fetches.want("a", at: 7)
        #expect(fetches.nextRead() == 7, "an offset read before is read again when wanted again")
        fetches.removeAll()
        #expect(fetches.offset(readBy: "tag-9") == nil)
        let gone = fetches.finish("tag-9")
        #expect(gone.isEmpty)
    }

    @Test func atMostMaxReadsOffsetsAreReadAtOnceTheOthersInTurn() {
        var fetches = ResultFetches(maxReads: 2)
        for offset in UInt64(1)...4 { fetches.want("job-\(offset)", at: offset) }
        var reading: [UInt64] = []
        while let offset = fetches.nextRead() {
            fetches.started("tag-\(offset)", reading: offset)
            reading.append(offset)
        }
        #expect(reading == [1, 2])
        #expect(fetches.finish("tag-1") == ["job-1"])
        #expect(fetches.nextRead() == 3)
        fetches.started("tag-3", reading: 3)
        #expect(fetches.nextRead() == nil)
        fetches.removeAll()
        #expect(fetches.nextRead() == nil, "the waiting offsets went with the connection")
    }
}
