import Foundation

/// The five priorities of an operation, as in `Operation.QueuePriority`.
///
/// On the wire, the descriptor's `priority` is the name (`"veryLow"` … `"veryHigh"`); the AMQP message priority
/// is 1 … 5, for queues declared with `x-max-priority: 5`.
public enum JobPriority: String, Sendable, Codable, CaseIterable, Comparable {
    case veryLow, low, normal, high, veryHigh

    /// The AMQP message priority, 1 (very low) … 5 (very high).
    public var amqpPriority: UInt8 {
        switch self {
        case .veryLow: 1
        case .low: 2
        case .normal: 3
        case .high: 4
        case .veryHigh: 5
        }
    }

    /// The priority for an AMQP message priority; values above 5 count as very high, 0 as very low.
    public init(amqpPriority: UInt8) {
        self = Self.allCases[Int(min(max(amqpPriority, 1), 5)) - 1]
    }

    var queuePriority: Operation.QueuePriority {
        switch self {
        case .veryLow: .veryLow
        case .low: .low
        case .normal: .normal
        case .high: .high
        case .veryHigh: .veryHigh
        }
    }

    /// Decodes a priority's name, refusing another with a message that lists the five.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let priority = JobPriority(rawValue: name) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: Self.problem(withName: name))
        }
        self = priority
    }

    /// Why `name` is no priority's name; its control characters escaped (`\u{1B}`), as a file may hold any.
    static func problem(withName name: String) -> String {
        var shown = ""
        for scalar in name.prefix(40).unicodeScalars {
            if scalar.properties.generalCategory == .control {
                shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return "priority '\(shown)' is none of \(allCases.map(\.rawValue).joined(separator: ", "))"
    }

    public static func < (lhs: JobPriority, rhs: JobPriority) -> Bool {
        lhs.amqpPriority < rhs.amqpPriority
    }
}
