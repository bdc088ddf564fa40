import Foundation
import Testing

@testable import Warren

@Suite("Checks of unique jobs before anything is published")
struct UniqueJobRequestTests {
    @Test func fittingUniqueJobsPass() {
        let requests = [
            JobRequest(type: "t", key: "a", uniqueFor: .seconds(1)),
            JobRequest(type: "t", key: "b", uniqueFor: .seconds(604_800)),
            // Not unique: the same key, and supersession, are fine.
            JobRequest(type: "t", key: "a", supersede: true),
        ]
        #expect(UniqueLocks.problem(withUnique: requests) == nil)
    }

    @Test func eachProblemNamesItsJob() {
        let cases: [(JobRequest, String)] = [
            (
                JobRequest(type: "t", uniqueFor: .seconds(5), id: "j"),
                "job j: a unique job needs a key: its lock is the key's"
            ),
            (
                JobRequest(type: "t", key: "k", uniqueFor: .milliseconds(999), id: "j"),
                "job j: a unique job's lock lasts from 1 second to 7 days (1 to 604800 seconds); got 0.999 seconds"
            ),
            (
                JobRequest(type: "t", key: "k", supersede: true, uniqueFor: .seconds(5), id: "j"),
                "job j: a unique job cannot supersede the jobs of its key, which hold its lock"
            ),
        ]
        for (request, message) in cases {
            #expect(UniqueLocks.problem(withUnique: [request]) == message)
        }
        let twice = [
            JobRequest(type: "t", key: "k", uniqueFor: .seconds(5), id: "a"),
            JobRequest(type: "t", key: "k", uniqueFor: .seconds(5), id: "b"),
        ]
        #expect(UniqueLocks.problem(withUnique: twice) == "job b: another job of this call is unique for key 'k' too")
    }

    @Test func aKeyWithControlCharactersIsRefused() {
        for key in ["line\nbreak", "cr\r", "tab\t", "nul\u{0}", "del\u{7F}"] {
            #expect(
                OperationDescriptor.problem(withUniqueKey: key)
                    == "a unique job's key cannot hold control characters (line breaks, tabs, …): it names a queue")
        }
        #expect(OperationDescriptor.problem(withUniqueKey: "spaces, # * . and 漢字 are fine") == nil)
    }

    @Test func lockAndWindowQueuesAreNoJobQueues() {
        for name in ["warren.unique.k", "warren.rate.echo.1per100ms", "warren.delay.q.1s", "warren.schedules"] {
            #expect(Topology.problem(withJobQueue: name) == "'\(name)' is one of Warren's own queues, not a job queue")
        }
        #expect(Topology.problem(withJobQueue: "warren.uniques") == nil)
    }

    @Test func theTokenExpiresWithTheLockAndNamesItsJob() {
        let token = UniqueLock.token(jobID: "job-1", lifetime: .milliseconds(1500))
        #expect(token.body == Array("job-1".utf8))
        #expect(token.properties.messageID == "job-1")
        #expect(token.properties.expiration == "1500")
        #expect(token.properties.persistent == true)
        #expect(UniqueLock.queue(forKey: "report:42") == "warren.unique.report:42")
    }
}
