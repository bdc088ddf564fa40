/// A value in an AMQP field table (queue arguments, message headers).
public enum AMQPFieldValue: Sendable, Hashable {
    case bool(Bool)
    /// Any integer; sent as a signed 64-bit integer (`l`), which RabbitMQ accepts for every numeric argument.
    case int(Int64)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    /// Seconds since 1970, AMQP's `T` type.
    case timestamp(UInt64)
    /// AMQP's `D` type, `value` / 10^`decimals`, kept as it came (so that a header passes through unchanged).
    case decimal(decimals: UInt8, value: UInt32)
    case table(AMQPTable)
    case array([AMQPFieldValue])
    case void

    /// The string, if this is a string (or UTF-8 bytes).
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .bytes(let b): return String(validating: b, as: UTF8.self)
        default: return nil
        }
    }

    /// The integer, if this is an integer.
    public var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }
}

/// An AMQP field table.
public typealias AMQPTable = [String: AMQPFieldValue]

extension AMQPFieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
