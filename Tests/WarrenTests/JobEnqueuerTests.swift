import Foundation
import Testing

@testable import Warren

@Suite("JobEnqueuer: what it checks and decides without the broker")
struct JobEnqueuerTests {
    @Test func fittingJobsPass() {
        let requests = [
            JobRequest(type: "sum", id: "a"),
            JobRequest(
                type: "sum", key: "k", deadline: Date(timeIntervalSinceNow: 60), maxAttempts: 3,
                timeLimit: .seconds(5), uniqueFor: .seconds(30), replyTo: "replies", id: "b"),
        ]
        #expect(JobEnqueuer.problem(with: requests) == nil)
    }

    @Test func eachCheckNamesWhatIsWrong() {
        let now = Date()
        let cases: [(JobRequest, String)] = [
            (JobRequest(type: "t", maxAttempts: 0, id: "j"), "job j: maxAttempts 0 must be at least 1"),
            (JobRequest(type: "t", replyTo: "", id: "j"), "job j: a reply queue name must be 1 to 255 bytes long"),
            (
                JobRequest(type: "t", replyTo: String(repeating: "r", count: 256), id: "j"),
                "job j: a reply queue name must be 1 to 255 bytes long"
            ),
            (
                JobRequest(type: "t", replyTo: Topology.deadQueue, id: "j"),
                "job j: reply queue '\(Topology.deadQueue)' is one of Warren's own queues"
            ),
            (
                JobRequest(type: "t", deadline: now, notBefore: now + 1, id: "j"),
                "job j: its deadline is not after its notBefore: it could never start"
            ),
            (
                JobRequest(type: "t", deadline: Date(timeIntervalSince1970: -70_000_000_000), id: "j"),
                "job j: deadline is outside the years 0001 to 9999, which the wire format's dates cover"
            ),
            (
                JobRequest(type: "t", uniqueFor: .seconds(5), id: "j"),
                "job j: a unique job needs a key: its lock is the key's"
            ),
        ]
        for (request, message) in cases {
            #expect(JobEnqueuer.problem(with: [request]) == message)
        }
        #expect(JobEnqueuer.problem(with: [JobRequest(type: "", id: "j")])?.hasPrefix("job j: ") == true)
        #expect(
            JobEnqueuer.problem(with: [JobRequest(type: "t", timeLimit: .zero, id: "j")])?.hasPrefix("job j: ") == true)
        #expect(JobEnqueuer.problem(with: [JobRequest(type: "t", id: "")]) == OperationDescriptor.problem(withID: ""))
        #expect(
            JobEnqueuer.problem(with: [JobRequest(type: "t", queue: "", id: "j")])
                == Topology.problem(withJobQueue: ""))
    }

    @Test func theFirstCheckToFailSpeaksForTheCall() {
        // An id problem comes before a queue problem, whichever job has it.
        let requests = [JobRequest(type: "t", queue: "", id: "a"), JobRequest(type: "t", id: "")]
        #expect(JobEnqueuer.problem(with: requests) == OperationDescriptor.problem(withID: ""))
        // Among jobs with the same problem, the first in publishing order.
        let late = [JobRequest(type: "t", maxAttempts: 0, id: "a"), JobRequest(type: "t", maxAttempts: -1, id: "b")]
        #expect(JobEnqueuer.problem(with: late) == "job a: maxAttempts 0 must be at least 1")
    }

    @Test func dependentsOfLostJobsAreFoundThroughTheGraphInOrder() {
        let ordered = [
            JobRequest(type: "t", id: "a"),
            JobRequest(type: "t", id: "b"),
            JobRequest(type: "t", dependencies: ["a"], id: "c"),
            JobRequest(type: "t", dependencies: ["c"], id: "d"),
            JobRequest(type: "t", dependencies: ["b"], id: "e"),
            JobRequest(type: "t", dependencies: ["a", "b"], id: "f"),
        ]
        #expect(JobEnqueuer.dependents(of: ["a"], in: ordered) == ["c", "d", "f"])
        #expect(JobEnqueuer.dependents(of: ["b"], in: ordered) == ["e", "f"])
        #expect(JobEnqueuer.dependents(of: ["d"], in: ordered).isEmpty)
        #expect(JobEnqueuer.dependents(of: [], in: ordered).isEmpty)
    }
}
