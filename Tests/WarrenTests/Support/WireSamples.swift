import Foundation

@testable import Warren

/// Random wire values that are hard to get right: escapes, combining marks, surrogate pairs, numbers of every size.
enum WireSamples {
    /// Characters that JSON writers and readers must treat with care.
    static let awkwardCharacters: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{A}", "\u{C}", "\u{D}", "\u{1F}",
        "\u{7F}", "é", "e\u{301}", "\u{212A}", "K", "\u{2028}", "\u{FEFF}", "\u{FFFF}", "😀", "👩‍👩‍👧", "中", "\u{10FFFF}",
    ]

    static func string(using generator: inout SeededGenerator, maxLength: Int = 8) -> String {
        let length = Int.random(in: 0...maxLength, using: &generator)
        return (0..<length).map { _ in awkwardCharacters.randomElement(using: &generator)! }.joined()
    }

    static func number(using generator: inout SeededGenerator) -> Double {
        switch Int.random(in: 0..<8, using: &generator) {
        case 0: return Double(Int.random(in: -1000...1000, using: &generator))
        case 1: return Double(Int64.random(in: .min ... .max, using: &generator))
        case 2: return Double(Int.random(in: -100_000...100_000, using: &generator)) / 1000
        case 3:
            return [
                0.1, -0.0, .leastNonzeroMagnitude, 2.2250738585072014e-308, 1.7976931348623157e308, 1e22, 1e23,
                0x1p53 + 2,
            ]
            .randomElement(using: &generator)!
        case 4: return Double.random(in: -1...1, using: &generator) * 1e-300
        case 5: return Double.random(in: -1e300...1e300, using: &generator)
        default:
            // Any finite double, from its bits.
            while true {
                let value = Double(bitPattern: generator.next())
                if value.isFinite { return value }
            }
        }
    }

    static func value(using generator: inout SeededGenerator, depth: Int = 4) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 7 : 4), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .number(number(using: &generator))
        case 3: return .string(string(using: &generator))
        case 4, 5:
            let count = Int.random(in: 0...4, using: &generator)
            return .object(
                Dictionary(
                    (0..<count).map { _ in
                        (string(using: &generator, maxLength: 4), value(using: &generator, depth: depth - 1))
                    },
                    uniquingKeysWith: { first, _ in first }))
        default:
            let count = Int.random(in: 0...4, using: &generator)
            return .array((0..<count).map { _ in value(using: &generator, depth: depth - 1) })
        }
    }

    /// A date in the years 1600 … 9998 (any fraction), or near now.
    static func date(using generator: inout SeededGenerator) -> Date {
        Bool.random(using: &generator)
            ? Date(timeIntervalSince1970: Double.random(in: -11_676_096_000...253_370_764_800, using: &generator))
            : Date(timeIntervalSince1970: 1_795_314_103.708 + Double.random(in: -1e6...1e6, using: &generator))
    }

    static func descriptor(using generator: inout SeededGenerator) -> OperationDescriptor {
        func maybe<T>(_ make: (inout SeededGenerator) -> T) -> T? {
            Bool.random(using: &generator) ? make(&generator) : nil
        }
        return OperationDescriptor(
            id: UUID().uuidString.lowercased(), type: string(using: &generator),
            input: value(using: &generator), priority: JobPriority.allCases.randomElement(using: &generator)!,
            sequence: Bool.random(using: &generator) ? .random(in: 0 ... .max, using: &generator) : 0,
            key: maybe { string(using: &$0) }, deadline: maybe { date(using: &$0) },
            createdAt: maybe { date(using: &$0) }, maxAttempts: maybe { Int.random(in: -5...Int.max, using: &$0) },
            dependencies: maybe { generator in (0..<Int.random(in: 0...3, using: &generator)).map { "d\($0)" } },
            requireSuccess: maybe { Bool.random(using: &$0) })
    }
}

/// Equality without the leniency of `==`: strings by their scalars (not canonical equivalence), doubles and dates
/// by their bits, so that a reader that normalises text or rounds differently is caught.
enum Identical {
    static func strings(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return a.unicodeScalars.elementsEqual(b.unicodeScalars)
        default: return false
        }
    }

    static func dates(_ a: Date?, _ b: Date?) -> Bool {
        a?.timeIntervalSinceReferenceDate.bitPattern == b?.timeIntervalSinceReferenceDate.bitPattern
    }

    static func values(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): return strings(x, y)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(values)
        case (.object(let x), .object(let y)):
            return x.count == y.count
                && x.allSatisfy { key, value in
                    // Dictionary keys compare as Swift strings: check that the key found has the same scalars.
                    guard let index = y.index(forKey: key) else { return false }
                    return strings(key, y[index].key) && values(value, y[index].value)
                }
        default: return false
        }
    }

    static func descriptors(_ a: OperationDescriptor, _ b: OperationDescriptor) -> Bool {
        a.version == b.version && strings(a.id, b.id) && strings(a.type, b.type) && values(a.input, b.input)
            && a.priority == b.priority && a.sequence == b.sequence && strings(a.key, b.key)
            && dates(a.deadline, b.deadline) && dates(a.createdAt, b.createdAt) && a.maxAttempts == b.maxAttempts
            && a.dependencies?.count == b.dependencies?.count
            && zip(a.dependencies ?? [], b.dependencies ?? []).allSatisfy(strings)
            && a.requireSuccess == b.requireSuccess
    }
}
