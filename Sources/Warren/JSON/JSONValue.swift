import Foundation

/// Any JSON value: the untyped form of an operation's input and output on the wire.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    /// A number a `Double` holds exactly, or the nearest `Double` to it: every number but the integers below.
    case number(Double)
    /// An integer that a `Double` cannot hold exactly (beyond ±2^53), such as a 64-bit id: kept exact. Integers
    /// a `Double` holds are always ``number(_:)`` when decoded or parsed; one built by hand as `.integer(5)` equals
    /// and hashes as `.number(5)`.
    case integer(Int64)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self), Double(exactly: value) == nil {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            do {
                self = .object(try container.decode([String: JSONValue].self))
            } catch DecodingError.typeMismatch(_, let context)
                where context.debugDescription.hasSuffix("found number instead.")
            {
                // Valid JSON that Foundation reads as no Double: a zero written with an exponent, or out of range.
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "a number Foundation cannot read as a double (out of its range, or a zero "
                        + "written with an exponent such as 0e5): write it within range, or as 0")
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, let integer = Int64(exactly: value) {
                try container.encode(integer)
            } else {
                try container.encode(value)
            }
        case .integer(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Converts any `Encodable` value through its JSON form.
    public init(encoding value: some Encodable) throws {
        let data = try WireCoding.encoder.encode(value)
        self = try WireCoding.decoder.decode(JSONValue.self, from: data)
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs.canonical, rhs.canonical) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x == y
        case (.integer(let x), .integer(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch canonical {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let value): hasher.combine(value)
        case .integer(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let value): hasher.combine(value)
        case .object(let value): hasher.combine(value)
        }
    }

    /// This value in its one form: an ``integer(_:)`` that a `Double` holds is a ``number(_:)``.
    private var canonical: JSONValue {
        if case .integer(let value) = self, let number = Double(exactly: value) { return .number(number) }
        return self
    }

    /// Decodes a typed value from this JSON value.
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        try WireCoding.decoder.decode(T.self, from: WireCoding.encoder.encode(self))
    }

    /// The value at `key`, when this is an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }
}
