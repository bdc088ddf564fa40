import AMQP
import Foundation
@_spi(Fuzzing) import Warren

/// The properties `warren-fuzz` checks, one function per decoder. Progress and status messages are only decoded:
/// they must not crash, and nothing else is promised about them.
enum WireFuzzing {
    static let codes: Set<String> = [
        "oversized", "unsupportedContentType", "malformedMessage", "invalidDescriptor", "unsupportedVersion",
    ]
    static let decoder = JobDecoder()

    /// Every decoder, one input.
    static func all(_ bytes: [UInt8]) {
        fastDescriptorReader(bytes)
        fastResultReader(bytes)
        jobs(bytes)
        results(bytes)
        controlMessages(bytes)
        _ = try? ProgressMessage.decode(bytes)
        _ = try? WorkerStatus.decode(bytes)
        urls(bytes)
    }

    static let tightDecoder = JobDecoder(maxMessageBytes: 256, maxNestingDepth: 3)

    /// `JobDecoder.decode`, without and with content types. An input whose first line is `CT:<type>` is decoded
    /// with that content type and the rest as body, so the corpus can reach the content-type checks.
    static func jobs(_ bytes: [UInt8]) {
        job(bytes, contentType: nil, decoder)
        job(bytes, contentType: "application/json; charset=utf-8", decoder)
        job(bytes, contentType: nil, tightDecoder)
        if bytes.starts(with: Array("CT:".utf8)) {
            let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            let contentType = String(decoding: bytes[3..<newline], as: UTF8.self)
            let body = Array(bytes[min(newline + 1, bytes.endIndex)...])
            job(body, contentType: contentType, decoder)
        }
    }

    static func job(_ body: [UInt8], contentType: String?, _ decoder: JobDecoder) {
        do {
            let descriptor = try decoder.decode(body, contentType: contentType)
            check(OperationDescriptor.problem(withID: descriptor.id) == nil, "accepted an invalid job id", body)
            // What a worker accepted, it echoes in results: it must encode, and read back.
            try fastDescriptorWriter(descriptor, body)
            let again = try decoder.decode(try descriptor.encoded(), contentType: nil)
            check(again.id == descriptor.id && again.sequence == descriptor.sequence, "round trip changed it", body)
            let result = JobResult(
                jobID: descriptor.id, type: descriptor.type, sequence: descriptor.sequence, key: descriptor.key,
                status: .succeeded, output: descriptor.input, workerID: "fuzz",
                timings: JobTimings(enqueuedAt: descriptor.createdAt, receivedAt: descriptor.deadline))
            _ = try JobResult.decode(try result.encoded())
            try fastResultWriter(result, body)
        } catch let error as JobError {
            check(codes.contains(error.code), "unexpected error code \(error.code)", body)
            check(error.message.unicodeScalars.count <= JobError.maxMessageLength, "error message too long", body)
        } catch {
            fail("an accepted descriptor did not round-trip: \(error)", body)
        }
    }

    /// The hand-written descriptor reader against `JSONDecoder`: whatever it reads, `JSONDecoder` must read
    /// identically (strings by scalars, numbers and dates by bits), under the default depth limit and a tight one.
    static func fastDescriptorReader(_ bytes: [UInt8]) {
        for depth in [64, 3] {
            guard let read = WireFastPaths.handReadDescriptor(bytes, maxNestingDepth: depth) else { continue }
            guard let reference = try? WireFastPaths.codableDescriptor(bytes) else {
                fail("the fast path read a descriptor that JSONDecoder refuses: \(read)", bytes)
            }
            check(Identical.descriptors(read, reference), "the fast path read \(read), JSONDecoder \(reference)", bytes)
        }
    }

    /// The hand-written result reader against `JSONDecoder`, for a result and for a batch of results: whatever it
    /// reads, `JSONDecoder` must read identically.
    static func fastResultReader(_ bytes: [UInt8]) {
        if let read = WireFastPaths.handReadResult(bytes) {
            guard let reference = try? WireFastPaths.codableResult(bytes) else {
                fail("the fast path read a result that JSONDecoder refuses: \(read)", bytes)
            }
            check(Identical.results(read, reference), "the fast path read \(read), JSONDecoder \(reference)", bytes)
        }
        guard let batch = WireFastPaths.handReadResultBatch(bytes) else { return }
        guard let reference = try? WireFastPaths.codableResultBatch(bytes) else {
            fail("the fast path read a result batch that JSONDecoder refuses: \(batch)", bytes)
        }
        check(
            batch.version == reference.version && batch.results.count == reference.results.count
                && zip(batch.results, reference.results).allSatisfy { read, decoded in
                    decoded.map { Identical.results(read, $0) } ?? false
                },
            "the fast path read the batch \(batch), JSONDecoder \(reference)", bytes)
    }

    /// The hand-written result writer against `JSONEncoder`: whatever it writes must be `JSONEncoder`'s bytes.
    static func fastResultWriter(_ result: JobResult, _ input: [UInt8]) throws {
        guard let written = WireFastPaths.handWritten(result) else { return }
        let expected = try WireFastPaths.encodedByJSONEncoder(result)
        check(
            written == expected,
            "the result writer wrote \(String(decoding: written, as: UTF8.self)), JSONEncoder "
                + String(decoding: expected, as: UTF8.self), input)
    }

    /// The hand-written descriptor writer against `JSONEncoder`: whatever it writes must be `JSONEncoder`'s bytes.
    static func fastDescriptorWriter(_ descriptor: OperationDescriptor, _ input: [UInt8]) throws {
        guard let written = WireFastPaths.handWritten(descriptor) else { return }
        let expected = try WireFastPaths.encodedByJSONEncoder(descriptor)
        check(
            written == expected,
            "the descriptor writer wrote \(String(decoding: written, as: UTF8.self)), JSONEncoder "
                + String(decoding: expected, as: UTF8.self), input)
    }

    /// `JobResult.decode`: whatever decodes must encode and read back, and the result writer must write it as
    /// `JSONEncoder` does.
    static func results(_ bytes: [UInt8]) {
        guard let result = try? JobResult.decode(bytes) else { return }
        do {
            let again = try JobResult.decode(try result.encoded())
            check(again.jobID == result.jobID && again.status == result.status, "round trip changed it", bytes)
            try fastResultWriter(result, bytes)
        } catch {
            fail("a decoded result did not round-trip: \(error)", bytes)
        }
    }

    /// `ControlMessage.decode`: whatever decodes must encode and read back.
    static func controlMessages(_ bytes: [UInt8]) {
        guard let message = try? ControlMessage.decode(bytes) else { return }
        do {
            let again = try ControlMessage.decode(try message.encoded())
            check(again.jobIDs == message.jobIDs && again.kind == message.kind, "round trip changed it", bytes)
        } catch {
            fail("a decoded control message did not round-trip: \(error)", bytes)
        }
    }

    /// `AMQPConfiguration(url:)` and the redaction of passwords.
    static func urls(_ bytes: [UInt8]) {
        let url = String(decoding: bytes, as: UTF8.self)
        do {
            let configuration = try AMQPConfiguration(url: url)
            let password = configuration.password
            if !password.isEmpty, password != "***" {
                check(!configuration.redactedURL.contains(":\(password)@"), "redactedURL shows the password", bytes)
                if url.contains(":\(password)@") {
                    check(
                        !AMQPConfiguration.redact(url).contains(":\(password)@"), "redact shows the password", bytes)
                }
            }
        } catch let error as AMQPError {
            check(error.code == .invalidURL, "unexpected error code \(error.code)", bytes)
        } catch {
            fail("unexpected error \(error)", bytes)
        }
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String, _ input: [UInt8]) {
        if !condition { fail(message(), input) }
    }

    static func fail(_ message: String, _ input: [UInt8]) -> Never {
        fatalError("\(message); input: \(String(decoding: input.prefix(300), as: UTF8.self).debugDescription)")
    }
}
