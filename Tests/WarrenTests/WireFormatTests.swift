import Foundation
import Testing

@testable import Warren

@Suite("Wire format v1")
struct WireFormatTests {
    private func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    private func decodeDescriptor(_ text: String) throws -> OperationDescriptor {
        try WireCoding.decoder.decode(OperationDescriptor.self, from: Data(text.utf8))
    }

    // MARK: - OperationDescriptor

    @Test func descriptorRoundTripsWithEveryField() throws {
        let descriptor = OperationDescriptor(
            id: "job-1", type: "sum",
            input: try .parse(#"{"numbers": [1, 2, 3], "label": "x", "nested": {"ok": true}}"#),
            priority: .veryHigh, sequence: 1_700_000_000_000_123, key: "list-7",
            deadline: Date(timeIntervalSince1970: 1_800_000_000.25),
            createdAt: Date(timeIntervalSince1970: 1_700_000_000.5))
        let data = try WireCoding.encoder.encode(descriptor)
        let decoded = try WireCoding.decoder.decode(OperationDescriptor.self, from: data)
        #expect(decoded == descriptor)
    }

    @Test func descriptorRoundTripsWithOnlyRequiredFields() throws {
        let descriptor = OperationDescriptor(id: "job-2", type: "echo", sequence: 0, createdAt: nil)
        let data = try WireCoding.encoder.encode(descriptor)
        #expect(try WireCoding.decoder.decode(OperationDescriptor.self, from: data) == descriptor)
    }

    @Test func descriptorEncodesNamesAndISODates() throws {
        let descriptor = OperationDescriptor(
            id: "job-3", type: "sum", priority: .veryLow, sequence: 42, key: "k",
            deadline: Date(timeIntervalSince1970: 0), createdAt: Date(timeIntervalSince1970: 1.5))
        let object = try json(Array(WireCoding.encoder.encode(descriptor)))
        #expect(object["version"] as? Int == 1)
        #expect(object["id"] as? String == "job-3")
        #expect(object["priority"] as? String == "veryLow")
        #expect(object["sequence"] as? Int == 42)
        #expect(object["deadline"] as? String == "1970-01-01T00:00:00.000Z")
        #expect(object["createdAt"] as? String == "1970-01-01T00:00:01.500Z")
    }

    @Test func descriptorFromAForeignClientWithOnlyTheEssentials() throws {
        // What a Python or shell client writes by hand: no priority, sequence, key or dates.
        let decoded = try decodeDescriptor(
            #"{"version": 1, "id": "py-1", "type": "sum", "input": {"numbers": [1, 2, 3]}}"#)
        #expect(decoded.version == 1)
        #expect(decoded.id == "py-1")
        #expect(decoded.type == "sum")
        #expect(decoded.input == .object(["numbers": .array([.number(1), .number(2), .number(3)])]))
        #expect(decoded.priority == .normal)
        #expect(decoded.sequence == 0)
        #expect(decoded.key == nil)
        #expect(decoded.deadline == nil)
        #expect(decoded.createdAt == nil)
    }

    @Test func descriptorWithoutInputHasNullInput() throws {
        let decoded = try decodeDescriptor(#"{"version": 1, "id": "py-2", "type": "echo"}"#)
        #expect(decoded.input == .null)
    }

    @Test func descriptorIgnoresUnknownFields() throws {
        let decoded = try decodeDescriptor(
            #"{"version": 1, "id": "py-3", "type": "echo", "input": null, "traceparent": "00-abc", "extra": [1]}"#)
        #expect(decoded.id == "py-3")
    }

    @Test(arguments: JobPriority.allCases)
    func descriptorDecodesEveryPriorityName(_ priority: JobPriority) throws {
        let decoded = try decodeDescriptor(
            #"{"version": 1, "id": "p", "type": "echo", "priority": "\#(priority.rawValue)"}"#)
        #expect(decoded.priority == priority)
    }

    @Test func priorityNamesAreTheOperationQueueNames() {
        #expect(JobPriority.allCases.map(\.rawValue) == ["veryLow", "low", "normal", "high", "veryHigh"])
    }

    @Test func descriptorRejectsAnUnknownPriorityName() {
        #expect(throws: DecodingError.self) {
            try decodeDescriptor(#"{"version": 1, "id": "p", "type": "echo", "priority": "urgent"}"#)
        }
    }

    @Test(arguments: [
        #"{"version": 1, "type": "echo"}"#,
        #"{"version": 1, "id": "x"}"#,
        #"{"id": "x", "type": "echo"}"#,
    ])
    func descriptorRequiresVersionIdAndType(_ text: String) {
        #expect(throws: DecodingError.self) { try decodeDescriptor(text) }
    }

    @Test func datesDecodeFromISO8601WithAndWithoutFractionalSeconds() throws {
        let decoded = try decodeDescriptor(
            #"""
            {"version": 1, "id": "d", "type": "echo",
             "deadline": "2030-01-02T03:04:05Z", "createdAt": "2030-01-02T03:04:05.250Z"}
            """#)
        let expected = try #require(
            DateComponents(
                calendar: Calendar(identifier: .gregorian), timeZone: TimeZone(identifier: "UTC"), year: 2030, month: 1,
                day: 2, hour: 3, minute: 4, second: 5
            ).date)
        #expect(decoded.deadline == expected)
        let createdAt = try #require(decoded.createdAt)
        #expect(abs(createdAt.timeIntervalSince(expected) - 0.25) < 0.000_1)
    }

    @Test func datesDecodeFromISO8601WithAnOffset() throws {
        let decoded = try decodeDescriptor(
            #"{"version": 1, "id": "d", "type": "echo", "deadline": "1970-01-01T01:00:10+01:00"}"#)
        #expect(decoded.deadline == Date(timeIntervalSince1970: 10))
    }

    @Test func datesDecodeFromUnixSeconds() throws {
        let decoded = try decodeDescriptor(
            #"{"version": 1, "id": "d", "type": "echo", "deadline": 1800000000, "createdAt": 1700000000.5}"#)
        #expect(decoded.deadline == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(decoded.createdAt == Date(timeIntervalSince1970: 1_700_000_000.5))
    }

    @Test func anUnreadableDateSaysWhatItExpected() throws {
        let error = try #require(throws: DecodingError.self) {
            try decodeDescriptor(#"{"version": 1, "id": "d", "type": "echo", "deadline": "next tuesday"}"#)
        }
        #expect(error.summary.contains("expected an ISO 8601 date or Unix seconds, got 'next tuesday'"))
        #expect(error.summary.hasPrefix("input.deadline"))
    }

    // MARK: - JobResult

    private func sampleResult(status: JobStatus = .succeeded) -> JobResult {
        JobResult(
            jobID: "job-9", type: "sum", sequence: 17, key: "list", status: status,
            output: .object(["sum": .number(6)]),
            error: status == .failed ? JobError(code: "handlerError", message: "boom", retryable: true) : nil,
            cancellation: status == .cancelled ? Cancellation.requested : nil, attempt: 2, redelivered: true,
            workerID: "host-1",
            timings: JobTimings(
                enqueuedAt: Date(timeIntervalSince1970: 100), receivedAt: Date(timeIntervalSince1970: 101),
                startedAt: Date(timeIntervalSince1970: 102.125), finishedAt: Date(timeIntervalSince1970: 103)))
    }

    @Test(arguments: JobStatus.allCases)
    func resultRoundTrips(_ status: JobStatus) throws {
        let result = sampleResult(status: status)
        #expect(try JobResult.decode(result.encoded()) == result)
    }

    @Test func resultUsesJobIdAndWorkerIdKeys() throws {
        let object = try json(sampleResult().encoded())
        #expect(object["jobId"] as? String == "job-9")
        #expect(object["workerId"] as? String == "host-1")
        #expect(object["jobID"] == nil)
        #expect(object["workerID"] == nil)
        #expect(object["status"] as? String == "succeeded")
        #expect(object["version"] as? Int == 1)
        let timings = try #require(object["timings"] as? [String: Any])
        #expect(timings["startedAt"] as? String == "1970-01-01T00:01:42.125Z")
    }

    @Test func resultEncodesItsErrorAndCancellation() throws {
        let failed = try json(sampleResult(status: .failed).encoded())
        let error = try #require(failed["error"] as? [String: Any])
        #expect(error["code"] as? String == "handlerError")
        #expect(error["message"] as? String == "boom")
        #expect(error["retryable"] as? Bool == true)

        let cancelled = try json(sampleResult(status: .cancelled).encoded())
        let cancellation = try #require(cancelled["cancellation"] as? [String: Any])
        #expect(cancellation["reason"] as? String == "requested")
    }

    @Test func resultDecodesFromHandWrittenJSON() throws {
        let result = try JobResult.decode(
            Array(
                #"""
                {"version": 1, "jobId": "j", "type": null, "sequence": 3, "key": null, "status": "failed",
                 "error": {"code": "unknownType", "message": "no such type", "retryable": false},
                 "attempt": 1, "redelivered": false, "workerId": "w", "timings": {"receivedAt": 5}}
                """#.utf8))
        #expect(result.jobID == "j")
        #expect(result.workerID == "w")
        #expect(result.status == .failed)
        #expect(result.error?.code == "unknownType")
        #expect(result.timings.receivedAt == Date(timeIntervalSince1970: 5))
        #expect(result.timings.startedAt == nil)
    }

    @Test func jobErrorDescriptionIsCodeThenMessage() {
        #expect(JobError(code: "invalidInput", message: "bad").description == "invalidInput: bad")
        #expect(JobError(code: "x", message: "y").retryable == false)
    }

    // MARK: - ControlMessage

    @Test func cancelMessageRoundTrips() throws {
        let message = ControlMessage.cancel(jobIDs: ["a", "b"])
        let decoded = try WireCoding.decoder.decode(ControlMessage.self, from: Data(message.encoded()))
        #expect(decoded.kind == "cancel")
        #expect(decoded.jobIDs == ["a", "b"])
        #expect(decoded.reason == "requested")
        #expect(decoded.key == nil)
        #expect(decoded.beforeSequence == nil)
        // Dates travel with millisecond precision, so compare the rest field by field and the date loosely.
        let sentAt = try #require(decoded.sentAt)
        #expect(abs(sentAt.timeIntervalSince(try #require(message.sentAt))) < 0.001)
    }

    @Test func supersedeMessageRoundTrips() throws {
        let message = ControlMessage.supersede(key: "list", before: 99)
        let decoded = try WireCoding.decoder.decode(ControlMessage.self, from: Data(message.encoded()))
        #expect(decoded.kind == "cancel")
        #expect(decoded.jobIDs.isEmpty)
        #expect(decoded.key == "list")
        #expect(decoded.beforeSequence == 99)
        #expect(decoded.reason == "superseded")
    }

    @Test func syncMessageRoundTrips() throws {
        let message = ControlMessage.sync(token: "tok-1")
        let decoded = try WireCoding.decoder.decode(ControlMessage.self, from: Data(message.encoded()))
        #expect(decoded.kind == "sync")
        #expect(decoded.token == "tok-1")
    }

    @Test func controlMessageUsesTheJobIdsKey() throws {
        let object = try json(ControlMessage.cancel(jobIDs: ["a"]).encoded())
        #expect(object["jobIds"] as? [String] == ["a"])
        #expect(object["jobIDs"] == nil)
        #expect(object["version"] as? Int == 1)
    }

    @Test func controlMessageFromAForeignClientWithDefaults() throws {
        let decoded = try WireCoding.decoder.decode(
            ControlMessage.self, from: Data(#"{"version": 1, "kind": "cancel", "jobIds": ["x"]}"#.utf8))
        #expect(decoded.jobIDs == ["x"])
        #expect(decoded.reason == "requested")
        #expect(decoded.sentAt == nil)
        #expect(decoded.cancellation == Cancellation(reason: "requested", message: "cancelled by request"))

        let bare = try WireCoding.decoder.decode(
            ControlMessage.self, from: Data(#"{"version": 1, "kind": "cancel", "key": "k", "beforeSequence": 5}"#.utf8))
        #expect(bare.jobIDs.isEmpty)
        #expect(bare.beforeSequence == 5)
    }

    @Test func aStatusRequestAsksForJobsOnlyWhenGivenANumber() throws {
        #expect(try json(ControlMessage.status(replyTo: "q").encoded())["jobs"] == nil)
        #expect(try json(ControlMessage.status(replyTo: "q", jobs: 25).encoded())["jobs"] as? Int == 25)
        let foreign = try ControlMessage.decode(Array(#"{"version":1,"kind":"status","replyTo":"q","jobs":3}"#.utf8))
        #expect(foreign.jobs == 3)
        // A field added after the first workers, of the wrong type, is left out: the request is still answered.
        for jobs in ["1.5", "\"10\"", "true", "9223372036854775808"] {
            let body = #"{"version":1,"kind":"status","replyTo":"q","jobs":"# + jobs + "}"
            let odd = try ControlMessage.decode(Array(body.utf8))
            #expect(odd.jobs == nil && odd.replyTo == "q", "\(jobs)")
        }
    }

    @Test func aResizeNamesTheLocalQueueAndWidth() throws {
        let object = try json(ControlMessage.resize(localQueue: "io", width: 32, worker: "w-2").encoded())
        #expect(object["kind"] as? String == "resize")
        #expect(object["localQueue"] as? String == "io")
        #expect(object["width"] as? Int == 32)
        #expect(object["worker"] as? String == "w-2")
        #expect(object["sentAt"] != nil)
    }

    @Test func onlyAMessageSentInTheLast30SecondsIsFresh() throws {
        var message = ControlMessage.status(replyTo: "q")
        #expect(message.isFresh)
        message.sentAt = Date(timeIntervalSinceNow: -31)
        #expect(!message.isFresh)
        message.sentAt = nil
        #expect(!message.isFresh, "a request without sentAt is never answered (§4.4): it may be replayed for a day")
        message.sentAt = Date(timeIntervalSinceNow: 3600)
        #expect(!message.isFresh, "a date ahead of the clock would keep a request fresh for as long as the stream")
    }

    @Test func aStatusRequestsReplyToMustBeRoutable() {
        #expect(ControlMessage.status(replyTo: "amq.gen-JzTY20BRgKO-HjmUJj0wLg").replyToProblem == nil)
        for refused in [
            String(repeating: "q", count: 256), "", "amq.rabbitmq.reply-to.abc.def", "amq.rabbitmq.reply-to",
        ] {
            #expect(ControlMessage.status(replyTo: refused).replyToProblem != nil, "\(refused.prefix(30))")
        }
    }

    @Test func aWorkerStatusListsItsJobsOnlyWhenAsked() throws {
        let plain =
            #"{"version":1,"workerId":"w","host":"h","pid":1,"startedAt":"2026-11-24T09:00:00Z","#
            + #""uptimeSeconds":1,"queues":["warren.default"],"pausedQueues":[],"prefetch":2,"localQueues":[],"totals":{}}"#
        let status = try WorkerStatus.decode(Array(plain.utf8))
        #expect(status.jobs == nil && status.moreJobs == nil)
        var listed = status
        listed.jobs = [
            WorkerStatus.Job(
                id: "j", type: "sum", state: .waitingForTurn, queue: "warren.default", localQueue: "default",
                priority: .high, key: nil, sequence: 7, attempt: 2, heldSeconds: 1.5, executingSeconds: nil,
                progress: 0.25, progressMessage: "a quarter", timeLimitSeconds: 30, cancelled: nil)
        ]
        listed.moreJobs = 4
        let object = try json(Array(WireCoding.encoder.encode(listed)))
        let job = try #require((object["jobs"] as? [[String: Any]])?.first)
        #expect(job["state"] as? String == "waitingForTurn")
        #expect(job["priority"] as? String == "high")
        #expect(job["timeLimitSeconds"] as? Double == 30)
        #expect(object["moreJobs"] as? Int == 4)
        #expect(try WorkerStatus.decode(Array(WireCoding.encoder.encode(listed))) == listed)
        // A state this build does not know (a newer worker's) reads as itself: the reply is not dropped (§4.4).
        let newer = String(decoding: try WireCoding.encoder.encode(listed), as: UTF8.self)
            .replacingOccurrences(of: "waitingForTurn", with: "sleepingForever")
        #expect(try WorkerStatus.decode(Array(newer.utf8)).jobs?.first?.state.rawValue == "sleepingForever")
    }

    @Test func supersedeCancellationNamesTheKeyAndSequence() {
        let cancellation = ControlMessage.supersede(key: "list", before: 12).cancellation
        #expect(cancellation.reason == "superseded")
        #expect(cancellation.message == "jobs of key 'list' below sequence 12 were cancelled")
    }
}
