import Foundation

/// Turns the bytes of a job message into an ``OperationDescriptor``, or a ``JobError`` that says precisely what is
/// wrong with them: the worker dead-letters such a message with that error's code as the reason.
///
/// Thread safety: immutable.
public struct JobDecoder: Sendable {
    /// Larger messages are rejected unread (`oversized`). Default: 1 MiB.
    public var maxMessageBytes: Int
    /// Messages whose arrays and objects nest deeper than this are rejected (`invalidDescriptor`) before they are
    /// parsed. The descriptor object itself is level 1, so its `input` may nest one level less. Default: 64.
    public var maxNestingDepth: Int

    /// The longest error message this decoder writes, in characters; quoted input is cut to fit, since the message
    /// travels in a dead letter's header. 1,000.
    public static let maxErrorMessageLength = 1000

    public init(maxMessageBytes: Int = 1 << 20, maxNestingDepth: Int = 64) {
        self.maxMessageBytes = maxMessageBytes
        self.maxNestingDepth = maxNestingDepth
    }

    /// Decodes and validates a job message.
    /// - Parameters:
    ///   - body: The message body.
    ///   - contentType: The message's `content_type` property; absent is accepted as JSON.
    /// - Throws: ``JobError`` with code `oversized`, `unsupportedContentType`, `invalidDescriptor` (also for
    ///   nesting deeper than ``maxNestingDepth``), `malformedMessage` or `unsupportedVersion`.
    public func decode(_ body: [UInt8], contentType: String?) throws -> OperationDescriptor {
        if body.count > maxMessageBytes {
            throw JobError(
                code: "oversized",
                message: "message of \(body.count) bytes exceeds the limit of \(maxMessageBytes) bytes")
        }
        if let contentType,
            contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
                != WireCoding.contentType
        {
            throw JobError(
                code: "unsupportedContentType",
                message: "content type '\(contentType.prefix(100))' is not supported; send \(WireCoding.contentType)")
        }
        if let offset = JSONNesting.offsetBeyond(limit: maxNestingDepth, in: body) {
            throw JobError(
                code: "invalidDescriptor",
                message: "message nests arrays and objects deeper than the limit of \(maxNestingDepth) levels "
                    + "(level \(maxNestingDepth + 1) opens at byte \(offset))")
        }
        let data = Data(body)
        let descriptor: OperationDescriptor
        do {
            descriptor = try WireCoding.decoder.decode(OperationDescriptor.self, from: data)
        } catch {
            let error = diagnose(data, error)
            throw JobError(code: error.code, message: Self.shortened(error.message), retryable: error.retryable)
        }
        if descriptor.version != WireCoding.version { throw unsupported(descriptor.version) }
        if let problem = OperationDescriptor.problem(withID: descriptor.id) {
            throw JobError(code: "invalidDescriptor", message: problem)
        }
        return descriptor
    }

    /// Explains a body that did not decode; only failing messages pay for this second look.
    private func diagnose(_ data: Data, _ error: any Error) -> JobError {
        guard let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
            return JobError(code: "malformedMessage", message: "message body is not valid JSON (\(data.count) bytes)")
        }
        guard let object = json as? [String: Any] else {
            return JobError(code: "invalidDescriptor", message: "message body is JSON but not an object")
        }
        if let version = object["version"] as? Int, version != WireCoding.version {
            return unsupported(version)
        }
        let detail =
            (error as? DecodingError).map {
                $0.summary.replacingOccurrences(of: "input", with: "descriptor", options: .anchored)
            } ?? "\(error)"
        return JobError(code: "invalidDescriptor", message: "not a valid operation descriptor: \(detail)")
    }

    /// Cuts `message` to ``maxErrorMessageLength`` characters: a decoding error may quote a whole field.
    static func shortened(_ message: String) -> String {
        guard message.count > maxErrorMessageLength else { return message }
        return message.prefix(maxErrorMessageLength - 1) + "…"
    }

    private func unsupported(_ version: Int) -> JobError {
        JobError(
            code: "unsupportedVersion",
            message: "descriptor version \(version) is not supported; this worker reads version \(WireCoding.version)")
    }
}
