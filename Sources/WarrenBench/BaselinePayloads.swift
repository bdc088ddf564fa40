import Foundation
import Warren

/// The bodies the baseline sends: as large as Warren's own descriptor and result for the same no-op job, so both
/// sides move the same number of bytes.
///
/// The baseline never parses them: it is the wire cost of a job and nothing else.
enum BaselinePayloads {
    /// A Warren `echo` descriptor as Warren encodes it (sorted keys, ISO 8601 dates).
    static let descriptor: [UInt8] = encode(
        OperationDescriptor(
            id: "00000000-0000-0000-0000-000000000000", type: "echo", input: BenchJobs.echoInput,
            sequence: 1_763_779_200_123_456))

    /// A Warren result of that job.
    static let result: [UInt8] = encode(
        JobResult(
            jobID: "00000000-0000-0000-0000-000000000000", type: "echo", sequence: 1_763_779_200_123_456, key: nil,
            status: .succeeded, output: BenchJobs.echoInput, workerID: "bench-host-12345",
            timings: JobTimings(enqueuedAt: Date(), receivedAt: Date(), startedAt: Date(), finishedAt: Date())))

    /// The body of a stream message holding `count` results, in Warren's batch format
    /// (`{"results":[RESULT,…],"version":1}`), put together as Warren's worker puts it together for each batch.
    static func resultBatch(count: Int) -> [UInt8] {
        var body = Array(#"{"results":["#.utf8)
        body.reserveCapacity(count * (result.count + 1) + 32)
        for index in 0..<count {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += result
        }
        body += Array(#"],"version":1}"#.utf8)
        return body
    }

    private static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
        }
        return Array((try? encoder.encode(value)) ?? Data())
    }
}
