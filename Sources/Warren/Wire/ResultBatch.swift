import Foundation

/// Results stored together, as one message of the `warren.results` stream: `{"results":[RESULT,…],"version":1}`,
/// each `RESULT` a result message body, in the order the worker published them (wire format §3.7).
///
/// A worker publishes each result on its own to the `warren.results` exchange, for whoever waits for it, and
/// appends it to the stream together with the other results of the same turn of its loop: one stream message per
/// turn rather than one per job, because a stream message costs the broker several times what a queue route costs.
///
/// Thread safety: stateless.
package enum ResultBatch {
    /// The `type` property of a batch message. A stream message of any other type is read as one result.
    package static let messageType = "warren.result.batch"

    /// The bytes a batch body adds to its results: `{"results":[`, `],"version":1}`, and a comma between two.
    static func overhead(count: Int) -> Int { 26 + max(count - 1, 0) }

    /// `results` in consecutive batches whose bodies hold at most `maxBytes` each, but for a result that is larger
    /// alone, which goes in a batch of its own.
    static func split(_ results: [[UInt8]], maxBytes: Int) -> [[[UInt8]]] {
        var batches: [[[UInt8]]] = []
        var batch: [[UInt8]] = []
        var bytes = 0
        for result in results {
            if !batch.isEmpty, bytes + result.count + overhead(count: batch.count + 1) > maxBytes {
                batches.append(batch)
                (batch, bytes) = ([], 0)
            }
            batch.append(result)
            bytes += result.count
        }
        if !batch.isEmpty { batches.append(batch) }
        return batches
    }

    /// The body of a batch of encoded result bodies.
    static func body(of results: [[UInt8]]) -> [UInt8] {
        var body = Array(#"{"results":["#.utf8)
        body.reserveCapacity(results.reduce(32) { $0 + $1.count + 1 })
        for (index, result) in results.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += result
        }
        body += Array(#"],"version":1}"#.utf8)
        return body
    }

    /// The results a stored message holds: each result of a batch (an unreadable one as its error, in its place),
    /// or the one result of a message that is not a batch.
    /// - Parameter body: The message's body.
    /// - Parameter type: The message's `type` property.
    package static func results(in body: [UInt8], type: String?) -> [Result<JobResult, WarrenError>] {
        do {
            guard type == messageType else { return [.success(try JobResult.decode(body))] }
            let (version, results) =
                try JobResultReader.batch(from: body).map { ($0.version, $0.results.map(Result.success)) }
                ?? decodedWithCodable(body)
            guard version == WireCoding.version else {
                return [.failure(WarrenError(.wireFormat, "result batch of version \(version); this reads 1"))]
            }
            return results
        } catch {
            let what = type == messageType ? "result batch" : "result message"
            return [.failure(WarrenError(.wireFormat, "unreadable \(what): \(error)"))]
        }
    }

    /// The version and results of a batch, read by `JSONDecoder` (``JobResultReader`` is the fast path).
    static func decodedWithCodable(
        _ body: [UInt8]
    ) throws -> (version: Int, results: [Result<JobResult, WarrenError>]) {
        let batch = try WireCoding.decoder.decode(Body.self, from: Data(body))
        return (batch.version, batch.results.map(\.result))
    }

    private struct Body: Decodable {
        let version: Int
        let results: [Element]
    }

    /// One result of a batch, or why it cannot be read: one bad result does not hide the others.
    private struct Element: Decodable {
        let result: Result<JobResult, WarrenError>

        init(from decoder: any Decoder) {
            do {
                result = .success(try JobResult(from: decoder))
            } catch {
                result = .failure(WarrenError(.wireFormat, "unreadable result in a batch: \(error)"))
            }
        }
    }
}
