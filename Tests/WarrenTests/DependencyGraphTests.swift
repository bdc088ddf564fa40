import Foundation
import Testing

@testable import Warren

@Suite struct DependencyGraphTests {
    func job(_ id: String, _ dependencies: [String] = []) -> JobRequest {
        JobRequest(type: "echo", dependencies: dependencies, id: id)
    }

    @Test func ordersDependenciesFirstAndKeepsOtherwiseTheGivenOrder() throws {
        let ordered = try DependencyGraph.ordered([job("c", ["b"]), job("b", ["a"]), job("a"), job("d")], known: [])
        #expect(ordered.map(\.id) == ["a", "d", "b", "c"])
    }

    /// A chain listed backwards, each job after the one that depends on it: the worst order for the sort. It once
    /// took minutes at this size (quadratic), long enough for the broker to drop the producer's idle connection.
    @Test func ordersALargeSubmissionListedBackwards() throws {
        let count = 30_000
        let requests = (0..<count).reversed().map { index in job("j\(index)", index == 0 ? [] : ["j\(index - 1)"]) }
        let ordered = try DependencyGraph.ordered(requests + [job("fan", ["j0", "j\(count - 1)"])], known: [])
        #expect(ordered.map(\.id) == (0..<count).map { "j\($0)" } + ["fan"])
    }

    @Test func acceptsDependenciesOnJobsEnqueuedEarlier() throws {
        #expect(try DependencyGraph.ordered([job("b", ["earlier"])], known: ["earlier"]).map(\.id) == ["b"])
    }

    @Test func anUncheckedRequestMayNameAnyValidIdButStillNotAnInvalidOne() throws {
        var elsewhere = job("b", ["enqueued-elsewhere"])
        elsewhere.checksDependencies = false
        #expect(try DependencyGraph.ordered([elsewhere], known: []).map(\.id) == ["b"])
        elsewhere.dependencies = ["no spaces"]
        #expect(throws: WarrenError.self) { try DependencyGraph.ordered([elsewhere], known: []) }
    }

    @Test func refusesSelfDependenciesUnknownIdsCyclesAndDuplicates() {
        func message(_ requests: [JobRequest]) -> String? {
            do {
                _ = try DependencyGraph.ordered(requests, known: [])
                return nil
            } catch let error as WarrenError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(message([job("a", ["a"])]) == "job a depends on itself")
        #expect(message([job("a", ["x", "y"])])?.contains("unknown jobs x, y") == true)
        #expect(
            message([job("a", ["b"]), job("b", ["c"]), job("c", ["a"]), job("d")])
                == "dependency cycle: a -> b -> c -> a")
        // Jobs that wait for a cycle are not in it.
        #expect(
            message([job("e", ["d"]), job("d", ["c"]), job("c", ["a"]), job("a", ["b"]), job("b", ["a"])])
                == "dependency cycle: a -> b -> a")
        #expect(message([job("a"), job("a")]) == "job id a appears twice")
        #expect(message([job("a"), job("b", ["a"]), job("a")]) == "job id a appears twice")
    }

    @Test func keepsTheGivenOrderOfJobsWithoutDependencies() throws {
        #expect(try DependencyGraph.ordered([job("c"), job("a"), job("b")], known: []).map(\.id) == ["c", "a", "b"])
        #expect(try DependencyGraph.ordered([job("only")], known: []).map(\.id) == ["only"])
    }
}

@Suite struct FinishedJobsTests {
    static func result(_ jobID: String, _ status: JobStatus, requeuedAt: Date? = nil) -> JobResult {
        JobResult(
            jobID: jobID, type: "echo", sequence: 1, key: nil, status: status, requeuedAt: requeuedAt, workerID: "w",
            timings: JobTimings())
    }
    @Test func remembersStatusesAndForgetsTheOldestPastCapacity() {
        var finished = FinishedJobs(capacity: 2)
        finished.record(Self.result("a", .succeeded), offset: nil)
        finished.record(Self.result("b", .failed), offset: 4)
        finished.record(Self.result("a", .cancelled), offset: nil)
        #expect(finished["a"]?.status == .succeeded, "the first record of a job wins")
        finished.record(Self.result("c", .succeeded), offset: nil)
        #expect(finished["a"] == nil)
        #expect(finished["b"]?.status == .failed)
        #expect(finished["c"]?.status == .succeeded)
        for index in 0..<10 { finished.record(Self.result("x\(index)", .succeeded), offset: nil) }
        #expect(finished["x9"] != nil && finished["x8"] != nil && finished["x7"] == nil)
    }

    @Test func aLaterSightingAddsOnlyTheOffsetTheFirstLacked() {
        var finished = FinishedJobs(capacity: 2)
        finished.record(Self.result("own", .succeeded), offset: nil)
        #expect(finished["own"]?.offset == nil)
        finished.record(Self.result("own", .failed), offset: 12)
        #expect(finished["own"]?.status == .succeeded && finished["own"]?.offset == 12)
        finished.record(Self.result("own", .succeeded), offset: 30)
        #expect(finished["own"]?.offset == 12, "the first result of a job is the one that counts")
        finished.record(Self.result("next", .succeeded), offset: 31)
        finished.record(Self.result("own", .succeeded), offset: 32)
        finished.record(Self.result("last", .succeeded), offset: nil)
        #expect(finished["own"] == nil, "an update does not make a job the newest")
    }

    @Test func aRunAfterADeadRequeueReplacesTheEarlierEndAndAnEarlierRunReadLateDoesNot() {
        var finished = FinishedJobs()
        func record(_ result: JobResult, offset: UInt64?) -> Bool { finished.record(result, offset: offset) }
        let first = Date(timeIntervalSince1970: 1_000)
        let second = Date(timeIntervalSince1970: 2_000)
        #expect(record(Self.result("j", .failed), offset: 5) == true)
        #expect(record(Self.result("j", .succeeded, requeuedAt: first), offset: nil) == true)
        #expect(finished["j"]?.status == .succeeded && finished["j"]?.offset == nil)
        #expect(record(Self.result("j", .succeeded, requeuedAt: first), offset: 9) == true, "the same run, seen again")
        #expect(finished["j"]?.offset == 9)
        #expect(record(Self.result("j", .failed), offset: 5) == false, "the first run's result, read late")
        #expect(record(Self.result("j", .cancelled, requeuedAt: second), offset: 12) == true)
        #expect(record(Self.result("j", .succeeded, requeuedAt: first), offset: 9) == false)
        #expect(finished["j"]?.status == .cancelled && finished["j"]?.offset == 12)
    }
}
