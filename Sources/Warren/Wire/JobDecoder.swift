import Foundation

/// Turns the bytes of a job message into an ``OperationDescriptor``, or a ``JobError`` that says precisely what is
/// wrong with them: the worker dead-letters such a message with that error's code as the reason.
///
/// Thread safety: immutable.
public struct JobDecoder: Sendable {
    /// Larger messages are rejected unread. Default: 1 MiB.
    public var maxMessageBytes: Int

    public init(maxMessageBytes: Int = 1 << 20) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Decodes and validates a job message.
    /// - Parameters:
    ///   - body: The message body.
    ///   - contentType: The message's `content_type` property; absent is accepted as JSON.
    /// - Throws: ``JobError`` with code `oversized`, `unsupportedContentType`, `malformedMessage`,
    ///   `invalidDescriptor` or `unsupportedVersion`.
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
                message: "content type '\(contentType)' is not supported; send \(WireCoding.contentType)")
        }
        let data = Data(body)
        let descriptor: OperationDescriptor
        do {
            descriptor = try WireCoding.decoder.decode(OperationDescriptor.self, from: data)
        } catch {
            throw diagnose(data, error)
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

    private func unsupported(_ version: Int) -> JobError {
        JobError(
            code: "unsupportedVersion",
            message: "descriptor version \(version) is not supported; this worker reads version \(WireCoding.version)")
    }
}
