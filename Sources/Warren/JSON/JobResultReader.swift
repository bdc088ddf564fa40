import Foundation

/// The fast path of ``JobResult/decode(_:)`` and ``ResultBatch/results(in:type:)``: reads a well-formed result, or
/// batch of results, straight from its bytes, to the very ``JobResult`` values that `JSONDecoder` with
/// ``WireCoding/decoder`` would make of them, or returns `nil`. A worker's first reading of the results stream
/// reads every result of a day this way; `JSONDecoder` takes about 50 µs for each.
///
/// It declines what ``DescriptorReader`` declines (anything ``JSONScanner`` declines, a member given twice, a
/// member of the wrong type, `null` for a required one, a date other than the wire format's, anything but
/// whitespace after the object), and an unknown status. The Codable path then decodes the message and says what is
/// wrong with it. `JobError`'s code and message are kept as written, as its synthesised `init(from:)` keeps them.
///
/// Thread safety: stateless.
enum JobResultReader {
    /// The deepest nesting read; a deeper result is left to `JSONDecoder`.
    static let maxDepth = 64

    /// The result in `body`, or `nil` where the Codable path must decide.
    static func result(from body: [UInt8]) -> JobResult? {
        body.withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes, maxDepth: maxDepth)
            return try? whole(&scanner) { try readResult(&$0, level: 1) }
        }
    }

    /// The version and results of the batch in `body` (``ResultBatch``), or `nil` where the Codable path must
    /// decide: also when one of its results is declined.
    static func batch(from body: [UInt8]) -> (version: Int, results: [JobResult])? {
        body.withUnsafeBufferPointer { bytes in
            var scanner = JSONScanner(bytes, maxDepth: maxDepth)
            return try? whole(&scanner) { scanner in
                var version: Int?
                var results: [JobResult]?
                try scanner.readMembers(ofObjectAt: 1, batchFields) { scanner, index in
                    guard index == 1 else {
                        version = try scanner.readInt()
                        return
                    }
                    var read: [JobResult] = []
                    try scanner.readArray(depth: 2) { read.append(try readResult(&$0, level: 3)) }
                    results = read
                }
                guard let version, let results else { throw JSONScanner.Decline() }
                return (version, results)
            }
        }
    }

    /// What `read` reads, when nothing but whitespace follows it.
    private static func whole<Value>(
        _ scanner: inout JSONScanner, _ read: (inout JSONScanner) throws -> Value
    ) throws -> Value {
        let value = try read(&scanner)
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw JSONScanner.Decline() }
        return value
    }

    private static func readResult(_ scanner: inout JSONScanner, level: Int) throws -> JobResult {
        var version: Int?
        var jobID: String?
        var type: String?
        var sequence: UInt64?
        var key: String?
        var status: JobStatus?
        var output: JSONValue?
        var error: JobError?
        var cancellation: Cancellation?
        var attempt: Int?
        var redelivered: Bool?
        var requeuedAt: Date?
        var workerID: String?
        var timings: JobTimings?
        try scanner.readMembers(ofObjectAt: level, resultFields) { scanner, index in
            switch resultKeys[index] {
            case .version: version = try scanner.readInt()
            case .jobID: jobID = try scanner.readString()
            case .type: type = try scanner.readUnlessNull { try $0.readString() }
            case .sequence: sequence = try scanner.readUInt64()
            case .key: key = try scanner.readUnlessNull { try $0.readString() }
            case .status:
                guard let named = JobStatus(rawValue: try scanner.readString()) else { throw JSONScanner.Decline() }
                status = named
            case .output: output = try scanner.readUnlessNull { try $0.readValue(depth: level) }
            case .error: error = try scanner.readUnlessNull { try readError(&$0, level: level + 1) }
            case .cancellation:
                cancellation = try scanner.readUnlessNull { try readCancellation(&$0, level: level + 1) }
            case .attempt: attempt = try scanner.readInt()
            case .redelivered: redelivered = try scanner.readBool()
            case .requeuedAt: requeuedAt = try scanner.readUnlessNull { try $0.readDate() }
            case .workerID: workerID = try scanner.readString()
            case .timings: timings = try readTimings(&scanner, level: level + 1)
            }
        }
        guard let version, let jobID, let sequence, let status, let attempt, let redelivered, let workerID,
            let timings
        else { throw JSONScanner.Decline() }
        var result = JobResult(
            jobID: jobID, type: type, sequence: sequence, key: key, status: status, output: output, error: error,
            cancellation: cancellation, attempt: attempt, redelivered: redelivered, requeuedAt: requeuedAt,
            workerID: workerID, timings: timings)
        result.version = version
        return result
    }

    private static func readError(_ scanner: inout JSONScanner, level: Int) throws -> JobError {
        var code: String?
        var message: String?
        var retryable: Bool?
        try scanner.readMembers(ofObjectAt: level, errorFields) { scanner, index in
            switch index {
            case 0: code = try scanner.readString()
            case 1: message = try scanner.readString()
            default: retryable = try scanner.readBool()
            }
        }
        guard let code, let message, let retryable else { throw JSONScanner.Decline() }
        var error = JobError(code: code, message: message, retryable: retryable)
        (error.code, error.message) = (code, message)
        return error
    }

    private static func readCancellation(_ scanner: inout JSONScanner, level: Int) throws -> Cancellation {
        var reason: String?
        var message: String?
        try scanner.readMembers(ofObjectAt: level, cancellationFields) { scanner, index in
            if index == 0 { reason = try scanner.readString() } else { message = try scanner.readString() }
        }
        guard let reason, let message else { throw JSONScanner.Decline() }
        return Cancellation(reason: reason, message: message)
    }

    private static func readTimings(_ scanner: inout JSONScanner, level: Int) throws -> JobTimings {
        var dates: [Date?] = [nil, nil, nil, nil]
        try scanner.readMembers(ofObjectAt: level, timingsFields) { scanner, index in
            dates[index] = try scanner.readUnlessNull { try $0.readDate() }
        }
        return JobTimings(enqueuedAt: dates[0], receivedAt: dates[1], startedAt: dates[2], finishedAt: dates[3])
    }

    /// The members of each object, as their Codable implementations name them.
    private static let resultKeys = JobResult.CodingKeys.allCases
    private static let resultFields = WireFieldNames(resultKeys.map(\.rawValue))
    private static let batchFields = WireFieldNames(["version", "results"])
    private static let errorFields = WireFieldNames(["code", "message", "retryable"])
    private static let cancellationFields = WireFieldNames(["reason", "message"])
    private static let timingsFields = WireFieldNames(["enqueuedAt", "receivedAt", "startedAt", "finishedAt"])
}
