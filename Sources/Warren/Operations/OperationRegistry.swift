import Foundation

/// Maps operation type names to the code that runs them, like `NSInvocationOperation`'s selector chosen at run time.
///
/// ```swift
/// var registry = OperationRegistry()
/// registry.register(Resize.self, on: "cpu") { input, job in
///     try resize(input, checkingCancellation: job)
/// }
/// ```
///
/// Register blocking code (it runs on a thread of its local queue, for CPU work and synchronous I/O) or
/// asynchronous code (it holds no thread while it awaits). Input and output are `Codable`. An
/// ``OperationDefinition`` names the type and both; the string forms serve foreign and dynamic types. An empty
/// registry runs nothing: ``registerDemoOperations()`` adds the types `warren worker` runs.
public struct OperationRegistry: Sendable {
    /// The local queue operations run on when registered without one.
    public static let defaultLocalQueue = "default"

    private(set) var operations: [String: RegisteredOperation] = [:]

    /// An empty registry.
    public init() {}

    /// The operation types registered so far, sorted.
    public var types: [String] {
        operations.keys.sorted()
    }

    /// Registers blocking code for `type`, replacing any earlier registration.
    /// - Parameters:
    ///   - type: The name descriptors use in their `type` field.
    ///   - localQueue: The worker's local queue it runs on. Default: `default`.
    ///   - body: Runs on a thread of that queue; check `job.isCancelled` often.
    public mutating func register<Input: Decodable & Sendable, Output: Encodable & Sendable>(
        _ type: String, on localQueue: String = defaultLocalQueue,
        blocking body: @escaping @Sendable (Input, JobContext) throws -> Output
    ) {
        operations[type] = RegisteredOperation(
            localQueue: localQueue,
            body: .blocking { input, job in
                try Self.encode(body(try Self.decode(Input.self, from: input, for: type), job), for: type)
            })
    }

    /// Registers asynchronous code for `type`, replacing any earlier registration.
    /// - Parameters:
    ///   - type: The name descriptors use in their `type` field.
    ///   - localQueue: The worker's local queue it counts against. Default: `default`.
    ///   - body: Runs in a task that is cancelled when the job is; it holds no thread while it awaits.
    public mutating func register<Input: Decodable & Sendable, Output: Encodable & Sendable>(
        _ type: String, on localQueue: String = defaultLocalQueue,
        asynchronous body: @escaping @Sendable (Input, JobContext) async throws -> Output
    ) {
        operations[type] = RegisteredOperation(
            localQueue: localQueue,
            body: .asynchronous { input, job in
                try Self.encode(await body(try Self.decode(Input.self, from: input, for: type), job), for: type)
            })
    }

    /// Runs an already registered `type` on another local queue; does nothing for a type not registered (check
    /// ``types`` first, as `warren worker --assign` does).
    public mutating func assign(_ type: String, to localQueue: String) {
        guard let registered = operations[type] else { return }
        operations[type] = RegisteredOperation(localQueue: localQueue, body: registered.body)
    }

    /// The code registered for `type`.
    package subscript(type: String) -> RegisteredOperation? {
        operations[type]
    }

    /// `input` as operation type `operationType` takes it.
    /// - Throws: ``JobError`` (`invalidInput`) naming the operation type and where the input does not fit, in JSON's
    ///   words: its producer knows the operation type, not the handler's Swift type.
    private static func decode<Input: Decodable>(
        _ type: Input.Type, from input: JSONValue, for operationType: String
    ) throws -> Input {
        if let input = input as? Input { return input }
        do {
            return try input.decode(as: Input.self)
        } catch let error as DecodingError {
            // No input at all means "all defaults" for an input whose fields are optional.
            if input == .null, let empty = try? JSONValue.object([:]).decode(as: Input.self) { return empty }
            var detail = error.summary
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
                let misfit = NumberMisfit.explanation(decoding: Input.self, from: input)
            {
                detail = misfit
            }
            throw JobError.invalidInput(detail, operationType: operationType)
        }
    }

    /// `output` as JSON.
    /// - Throws: ``JobError`` (`invalidOutput`) naming the operation type and the field JSON cannot hold.
    private static func encode(_ output: some Encodable, for operationType: String) throws -> JSONValue {
        if let output = output as? JSONValue { return output }
        do {
            return try JSONValue(encoding: output)
        } catch let error as EncodingError {
            throw JobError.invalidOutput(error.summary(root: "output"), operationType: operationType)
        }
    }
}

/// An operation type's code, type-erased to JSON in and out.
package struct RegisteredOperation: Sendable {
    package enum Body: Sendable {
        case blocking(@Sendable (JSONValue, JobContext) throws -> JSONValue)
        case asynchronous(@Sendable (JSONValue, JobContext) async throws -> JSONValue)
    }

    package let localQueue: String
    package let body: Body
}

extension EncodingError {
    /// One line that says which field JSON cannot hold, the value being called `root`:
    /// `output.ratio: NaN is not a JSON number`.
    func summary(root: String) -> String {
        switch self {
        case .invalidValue(let value, let context):
            let path = DecodingError.inputPath(context.codingPath, root: root)
            if let number = (value as? Double) ?? (value as? Float).map(Double.init), !number.isFinite {
                let name = number.isNaN ? "NaN" : number < 0 ? "-infinity" : "infinity"
                return "\(path): \(name) is not a JSON number"
            }
            return "\(path): \(context.debugDescription)"
        @unknown default:
            return "\(self)"
        }
    }
}

extension DecodingError {
    /// One line that says where in the input the problem is and what was expected.
    var summary: String { summary(root: "input") }

    /// One line that says where in the document the problem is and what was expected, the document being called
    /// `root` (`jobs[1].name: expected a string`).
    public func summary(root: String) -> String {
        func path(_ context: Context) -> String { Self.inputPath(context.codingPath, root: root) }
        switch self {
        case .typeMismatch(let type, let context):
            return "\(path(context)): expected \(Self.jsonName(of: type))"
        case .valueNotFound(let type, let context):
            return "\(path(context)): expected \(Self.jsonName(of: type)), found null"
        case .keyNotFound(let key, let context):
            return "\(path(context)): missing key '\(key.stringValue)'"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(self)"
        }
    }

    /// What JSON value a Swift type decodes from, as a JSON writer knows it: `an object` for `[String: Any]` (what
    /// a keyed container reports), `an integer` for `Int`; the Swift type's name for anything else.
    static func jsonName(of type: Any.Type) -> String {
        switch type {
        case is String.Type, is Substring.Type, is Character.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type, is UInt.Type, is UInt8.Type,
            is UInt16.Type, is UInt32.Type, is UInt64.Type:
            "an integer"
        case is Double.Type, is Float.Type, is Decimal.Type: "a number"
        case is [String: Any].Type, is [String: any Sendable].Type: "an object"
        case is [Any].Type, is [any Sendable].Type: "an array"
        default: "\(type)"
        }
    }

    /// A coding path as the input's path: `input.numbers[1]`.
    static func inputPath(_ codingPath: [any CodingKey], root: String = "input") -> String {
        let path = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
        return root.isEmpty && path.hasPrefix(".") ? String(path.dropFirst()) : root + path
    }
}
