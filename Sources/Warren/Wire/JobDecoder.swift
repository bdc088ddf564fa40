import Foundation

/// Turns the bytes of a job message into an ``OperationDescriptor``, or a ``JobError`` that says precisely what is
/// wrong with them: the worker dead-letters such a message with that error's code as the reason.
///
/// A well-formed descriptor is read by a hand-written reader; anything it does not read exactly as Foundation's
/// `JSONDecoder` would goes to `JSONDecoder`, whose errors say what is wrong.
///
/// Thread safety: immutable.
package struct JobDecoder: Sendable {
    /// Larger messages are rejected unread (`oversized`). Default: 1 MiB.
    package var maxMessageBytes: Int
    /// Messages whose arrays and objects nest deeper than this are rejected (`invalidDescriptor`) before they are
    /// parsed. The descriptor object itself is level 1, so its `input` may nest one level less. Default: 64; a
    /// worker takes up to ``maxNestingDepths``'s upper bound.
    package var maxNestingDepth: Int

    /// The nesting limits a worker takes: up to 500, since a result nests its job's input (as its output) three
    /// levels deeper in a result batch, and JSON parsers, Foundation's included, give up past 512 levels.
    package static let maxNestingDepths = 2...500

    /// Jobs with more dependencies are rejected (`invalidDescriptor`). Default: 100.
    package var maxDependencies: Int

    package init(maxMessageBytes: Int = 1 << 20, maxNestingDepth: Int = 64, maxDependencies: Int = 100) {
        self.maxMessageBytes = maxMessageBytes
        self.maxNestingDepth = maxNestingDepth
        self.maxDependencies = maxDependencies
    }

    /// Decodes and validates a job message.
    /// - Parameters:
    ///   - body: The message body.
    ///   - contentType: The message's `content_type` property; absent is accepted as JSON.
    ///   - contentEncoding: The message's `content_encoding` property: absent, empty, `identity` or `utf-8` (as
    ///     Celery's kombu sets it), in any letter case; a compressed body (`gzip`, …) is refused.
    /// - Throws: ``JobError`` with code `oversized`, `unsupportedContentType` (also for a content encoding),
    ///   `invalidDescriptor` (also for nesting deeper than ``maxNestingDepth``), `malformedMessage` or
    ///   `unsupportedVersion`.
    package func decode(_ body: [UInt8], contentType: String?, contentEncoding: String? = nil) throws
        -> OperationDescriptor
    {
        if body.count > maxMessageBytes {
            throw JobError(
                code: "oversized",
                message: "message of \(body.count) bytes exceeds the limit of \(maxMessageBytes) bytes")
        }
        // Warren's own jobs say exactly "application/json": they skip the Foundation string work (a third of the
        // rest of a fast-path decode).
        if let contentType, contentType != WireCoding.contentType,
            contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
                != WireCoding.contentType
        {
            throw JobError(
                code: "unsupportedContentType",
                message: "content type '\(contentType.prefix(100))' is not supported; send \(WireCoding.contentType)")
        }
        if let contentEncoding, !Self.plainEncodings.contains(contentEncoding.lowercased()) {
            throw JobError(
                code: "unsupportedContentType",
                message: "content encoding '\(contentEncoding.prefix(100))' is not supported; send the JSON "
                    + "uncompressed, without a content_encoding (or utf-8)")
        }
        // The fast path declines anything nested deeper than the limit, so what it reads passes the depth check.
        var descriptor =
            try DescriptorReader.descriptor(from: body, maxDepth: maxNestingDepth) ?? decodeWithCodable(body)
        // A dependency listed twice is one dependency: its result reaches the job once.
        if let dependencies = descriptor.dependencies, dependencies.count > 1,
            Set(dependencies).count < dependencies.count
        {
            descriptor.dependencies = dependencies.uniqued()
        }
        if descriptor.version != WireCoding.version { throw unsupported(descriptor.version) }
        if let problem = OperationDescriptor.problem(withID: descriptor.id) {
            throw JobError(code: "invalidDescriptor", message: problem)
        }
        if let dependencies = descriptor.dependencies, dependencies.count > maxDependencies {
            throw JobError(
                code: "invalidDescriptor",
                message: "the job has \(dependencies.count) dependencies; the limit is \(maxDependencies)")
        }
        // A dependency that cannot be a job id would never end, and the job would wait for good.
        if let problem = descriptor.dependencies?.lazy.compactMap(OperationDescriptor.problem(withID:)).first {
            throw JobError(code: "invalidDescriptor", message: "dependencies: \(problem)")
        }
        if let timeLimit = descriptor.timeLimitSeconds,
            let problem = OperationDescriptor.problem(withTimeLimit: timeLimit)
        {
            throw JobError(code: "invalidDescriptor", message: "timeLimitSeconds: \(problem)")
        }
        if descriptor.unique == true, let problem = OperationDescriptor.problem(withUniqueKey: descriptor.key) {
            throw JobError(code: "invalidDescriptor", message: "unique: \(problem)")
        }
        return descriptor
    }

    /// The `content_encoding` values of a body that is plain JSON text.
    private static let plainEncodings: Set<String> = ["", "identity", "utf-8", "utf8"]

    /// The `id` a message that is not a valid descriptor names, so that its producer still gets an answer and its
    /// dead letter can be found by it: the first `id` member of the body's top-level object, if it is a string, in
    /// any encoding a worker reads. Nothing else in the body needs to be valid.
    package static func salvageID(from body: [UInt8]) -> String? {
        salvage(from: body).id
    }

    /// What can be read of a message that is no valid descriptor (``salvageID(from:)``): the first `id`, `type`,
    /// `key`, `sequence` and `unique` members of the body's top-level object that are of their field's type.
    static func salvage(from body: [UInt8]) -> SalvagedDescriptor {
        var salvaged = SalvagedDescriptor()
        guard let text = try? JSONText.utf8(body) else { return salvaged }
        JSONText.firstMembers(["id", "type", "key", "sequence", "unique"], inObject: text) { name, scanner in
            switch name {
            case "id": salvaged.id = scanner.isAtString() ? try? scanner.readString() : nil
            case "type": salvaged.type = scanner.isAtString() ? try? scanner.readString() : nil
            case "key": salvaged.key = scanner.isAtString() ? try? scanner.readString() : nil
            case "sequence": salvaged.sequence = try? scanner.readUInt64()
            default: salvaged.unique = try? scanner.readBool()
            }
        }
        return salvaged
    }

    /// The slow path: the body as UTF-8, the depth check, then Foundation's `JSONDecoder`, whose errors say what
    /// is wrong.
    private func decodeWithCodable(_ body: [UInt8]) throws -> OperationDescriptor {
        let text = try JSONText.utf8(body)
        if let offset = JSONNesting.offsetBeyond(limit: maxNestingDepth, in: text) {
            throw JobError(
                code: "invalidDescriptor",
                message: "message nests arrays and objects deeper than the limit of \(maxNestingDepth) levels "
                    + "(level \(maxNestingDepth + 1) opens at byte \(offset))")
        }
        if let offset = JSONText.trailingCommaOffset(in: text) {
            throw JobError(
                code: "malformedMessage",
                message: "message body is not valid JSON (\(body.count) bytes): a comma before a closing bracket "
                    + "at byte \(offset)")
        }
        let data = Data(text)
        do {
            return try WireCoding.decoder.decode(OperationDescriptor.self, from: data)
        } catch {
            // JobError cuts the message, which may quote a whole field, to JobError.maxMessageLength.
            throw diagnose(data, error, bodyBytes: body.count)
        }
    }

    /// Explains a body that did not decode; only failing messages pay for this second look.
    private func diagnose(_ data: Data, _ error: any Error, bodyBytes: Int) -> JobError {
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            // Foundation's parser says what it found in its debug description; a number beyond a double's range
            // is valid JSON all the same.
            let found = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            if let found, found.contains("is not representable") {
                return JobError(
                    code: "invalidDescriptor",
                    message: "not a valid operation descriptor: a number a double cannot hold (\(found))")
            }
            return JobError(
                code: "malformedMessage",
                message: "message body is not valid JSON (\(bodyBytes) bytes)" + (found.map { ": \($0)" } ?? ""))
        }
        guard let object = json as? [String: Any] else {
            return JobError(code: "invalidDescriptor", message: "message body is JSON but not an object")
        }
        if let version = object["version"] as? Int, version != WireCoding.version {
            return unsupported(version)
        }
        if case .dataCorrupted(let context)? = error as? DecodingError, context.codingPath.isEmpty {
            // JSONDecoder reports a number that does not fit its field as "not valid JSON", without a path.
            return JobError(
                code: "invalidDescriptor", message: "not a valid operation descriptor: \(numberProblem(object))")
        }
        let detail =
            (error as? DecodingError).map {
                $0.summary.replacingOccurrences(of: "input", with: "descriptor", options: .anchored)
            } ?? "\(error)"
        return JobError(code: "invalidDescriptor", message: "not a valid operation descriptor: \(detail)")
    }

    /// Which number of a valid JSON object does not fit its field.
    private func numberProblem(_ object: [String: Any]) -> String {
        func number(_ key: String) -> NSNumber? {
            guard let value = object[key], !(value is NSNull) else { return nil }
            return value as? NSNumber
        }
        if let sequence = number("sequence"), UInt64(exactly: sequence) == nil {
            return "descriptor.sequence: \(sequence) is not an integer from 0 to \(UInt64.max)"
        }
        if let version = number("version"), Int(exactly: version) == nil {
            return "descriptor.version: \(version) is not an integer"
        }
        if let attempts = number("maxAttempts"), Int(exactly: attempts) == nil {
            return "descriptor.maxAttempts: \(attempts) is not an integer from \(Int.min) to \(Int.max)"
        }
        return "a number does not fit its field"
    }

    private func unsupported(_ version: Int) -> JobError {
        JobError(
            code: "unsupportedVersion",
            message: "descriptor version \(version) is not supported; this worker reads version \(WireCoding.version)")
    }
}
