import Foundation
import Testing

@testable import Warren

@Suite("ResultBatch")
struct ResultBatchTests {
    static func result(_ id: String, status: JobStatus = .succeeded) -> JobResult {
        JobResult(
            jobID: id, type: "echo", sequence: 7, key: "k", status: status, output: ["n": 1],
            error: status == .failed ? JobError(code: "handlerError", message: "boom") : nil, workerID: "w",
            timings: JobTimings(
                enqueuedAt: Date(timeIntervalSince1970: 1_795_000_000.25),
                finishedAt: Date(timeIntervalSince1970: 1_795_000_001.5)))
    }

    static func successes(_ results: [Result<JobResult, WarrenError>]) -> [JobResult?] {
        results.map { try? $0.get() }
    }

    @Test func aBatchReadsBackAsItsResultsInOrder() throws {
        let results = [Self.result("a"), Self.result("b", status: .failed), Self.result("c", status: .cancelled)]
        let body = ResultBatch.body(of: try results.map { try $0.encoded() })
        #expect(Self.successes(ResultBatch.results(in: body, type: ResultBatch.messageType)) == results)
    }

    @Test func theBodyIsPlainJSONWithTheResultsAndTheVersion() throws {
        let body = ResultBatch.body(of: [try Self.result("a").encoded()])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(object["version"] as? Int == 1)
        let results = try #require(object["results"] as? [[String: Any]])
        #expect(results.map { $0["jobId"] as? String } == ["a"])
    }

    @Test func anUnreadableResultIsReportedInItsPlaceAndTheOthersAreRead() throws {
        let body = ResultBatch.body(of: [try Self.result("a").encoded(), Array(#"{"jobId": 5}"#.utf8)])
        let read = ResultBatch.results(in: body, type: ResultBatch.messageType)
        #expect(read.count == 2)
        #expect(try read[0].get().jobID == "a")
        guard case .failure(let error) = read[1] else {
            Issue.record("expected an error")
            return
        }
        #expect(error.code == .wireFormat && error.message.contains("unreadable result in a batch"))
    }

    @Test func aMessageOfAnotherTypeIsOneResult() throws {
        let result = Self.result("solo")
        for type in ["warren.result.succeeded", nil] {
            #expect(Self.successes(ResultBatch.results(in: try result.encoded(), type: type)) == [result])
        }
        let garbage = ResultBatch.results(in: Array("not a result".utf8), type: nil)
        guard case .failure(let error) = garbage.first, garbage.count == 1 else {
            Issue.record("\(garbage)")
            return
        }
        #expect(error.message.hasPrefix("unreadable result message"))
    }

    @Test func anUnreadableBatchOrAnotherVersionIsOneError() {
        let broken = ResultBatch.results(in: Array(#"{"results": [}"#.utf8), type: ResultBatch.messageType)
        #expect(broken.count == 1 && (try? broken[0].get()) == nil)
        let future = ResultBatch.results(
            in: Array(#"{"results": [], "version": 2}"#.utf8), type: ResultBatch.messageType)
        guard case .failure(let error) = future.first, future.count == 1 else {
            Issue.record("\(future)")
            return
        }
        #expect(error.message.contains("version 2"))
    }

    @Test func anEmptyBatchHoldsNoResult() {
        #expect(ResultBatch.results(in: ResultBatch.body(of: []), type: ResultBatch.messageType).isEmpty)
    }
}

@Suite("StoredResults")
struct StoredResultsTests {
    @Test func fillsUpByCountOrBytesAndEmptiesOnceStored() {
        var stored = StoredResults()
        stored.maxCount = 2
        stored.maxBytes = 31  // {"results":[{},{}],"version":1}
        #expect(stored.isEmpty && stored.hasRoom(for: 1_000) && stored.batches == nil, "one result always has room")
        stored.append(Array("{}".utf8))
        #expect(stored.hasRoom(for: 2) && !stored.hasRoom(for: 3), "a batch's body stays within maxBytes")
        stored.append(Array("{}".utf8))
        #expect(!stored.hasRoom(for: 0), "maxCount")
        let settlement = Settlement(deliveryTag: 1, action: .ack)
        stored.waitFor(settlement)
        let batches = try! #require(stored.batches)
        #expect(batches.map(ResultBatch.body(of:)) == [Array(#"{"results":[{},{}],"version":1}"#.utf8)])
        #expect(stored.clear().map(ObjectIdentifier.init) == [ObjectIdentifier(settlement)])
        #expect(stored.isEmpty && stored.batches == nil)
    }

    @Test func resultsHeldBeforeTheLargestMessageFellGoInBatchesWithinIt() {
        var stored = StoredResults()
        stored.append(Array("{1}".utf8))
        stored.append(Array("{22}".utf8))
        stored.append(Array("{333}".utf8))
        #expect(stored.batches?.count == 1)
        stored.maxBytes = 34  // the broker told its limit: 26 bytes of framing and commas, 8 of results
        #expect(stored.batches == [[Array("{1}".utf8), Array("{22}".utf8)], [Array("{333}".utf8)]])
        #expect(stored.batches?.allSatisfy { ResultBatch.body(of: $0).count <= 34 } == true)
    }

    @Test func aBatchSplitsIntoBodiesWithinTheLargestMessageALargerResultAlone() {
        let results = [
            Array("{1}".utf8), Array("{22}".utf8), Array(repeating: UInt8(ascii: "x"), count: 40), Array("{}".utf8),
        ]
        // Bodies of at most 34 bytes: 26 of framing and commas, 8 of results.
        let batches = ResultBatch.split(results, maxBytes: 34)
        #expect(batches == [[results[0], results[1]], [results[2]], [results[3]]])
        #expect(ResultBatch.body(of: batches[0]).count == 34)
        #expect(ResultBatch.split([], maxBytes: 34).isEmpty)
    }

    @Test func heldResultsAreDueByTheHoldPolicy() {
        var stored = StoredResults()
        stored.hold.threshold = 2
        let start = ContinuousClock.now
        #expect(stored.dueAt == nil)
        stored.append(Array("{}".utf8), at: start)
        #expect(stored.dueAt == start + stored.hold.maxDelay)
        stored.append(Array("{}".utf8), at: start + .milliseconds(1))
        #expect(stored.dueAt == start)
        _ = stored.clear()
        #expect(stored.dueAt == nil)
    }
}
