import Foundation
import Testing

@testable import Warren

@Suite("Checks of unique jobs before anything is published")
struct UniqueJobRequestTests {
    @Test func fittingUniqueJobsPass() {
        let requests = [
            JobRequest(type: "t", key: "a", uniqueFor: .seconds(1)),
            JobRequest(type: "t", key: "b", uniqueFor: .seconds(2_592_000)),
            // Not unique: the same key, and supersession, are fine.
            JobRequest(type: "t", key: "a", supersede: true),
        ]
        #expect(Producer.problem(withUnique: requests) == nil)
    }

    @Test func eachProblemNamesItsJob() {
        let cases: [(JobRequest, String)] = [
            (JobRequest(type: "t", uniqueFor: .seconds(5), id: "j"), "job j: a unique job needs a key: its lock is the key's"),
            (JobRequest(type: "t", key: "k", uniqueFor: .milliseconds(999), id: "j"),
             "job j: a unique job's lock lasts from 1 second to 30 days (1 to 2592000 seconds); got 0.999 seconds"),
            (JobRequest(type: "t", key: "k", supersede: true, uniqueFor: .seconds(5), id: "j"),
             "job j: a unique job cannot supersede the jobs of its key, which hold its lock"),
        ]
        for (request, message) in cases {
            #expect(Producer.problem(withUnique: [request]) == message)
        }
        let twice = [
            JobRequest(type: "t", key: "k", uniqueFor: .seconds(5), id: "a"),
            JobRequest(type: "t", key: "k", uniqueFor: .seconds(5), id: "b"),
        ]
        #expect(Producer.problem(withUnique: twice) == "job b: another job of this call is unique for key 'k' too")
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
