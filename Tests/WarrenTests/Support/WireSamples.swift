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
        var descriptor = OperationDescriptor(
            id: UUID().uuidString.lowercased(), type: string(using: &generator),
            input: value(using: &generator), priority: JobPriority.allCases.randomElement(using: &generator)!,
            sequence: Bool.random(using: &generator) ? .random(in: 0 ... .max, using: &generator) : 0,
            key: maybe { string(using: &$0) }, deadline: maybe { date(using: &$0) },
            notBefore: maybe { date(using: &$0) }, createdAt: maybe { date(using: &$0) },
            maxAttempts: maybe { Int.random(in: -5...Int.max, using: &$0) },
            timeLimitSeconds: maybe { Double.random(in: 0.001...31_536_000, using: &$0) },
            unique: maybe { Bool.random(using: &$0) },
            dependencies: maybe { generator in (0..<Int.random(in: 0...3, using: &generator)).map { "d\($0)" } },
            requireSuccess: maybe { Bool.random(using: &$0) })
        // A unique job's key must fit its lock's name, or JobDecoder refuses the job.
        if descriptor.unique == true, OperationDescriptor.problem(withUniqueKey: descriptor.key) != nil {
            descriptor.unique = false
        }
        return descriptor
    }

    /// A result of any status, with every optional member there or not.
    static func result(using generator: inout SeededGenerator) -> JobResult {
        func maybe<T>(_ make: (inout SeededGenerator) -> T) -> T? {
            Bool.random(using: &generator) ? make(&generator) : nil
        }
        let status = JobStatus.allCases.randomElement(using: &generator)!
        let text = string(using: &generator)
        return JobResult(
            jobID: "job-\(text)", type: maybe { string(using: &$0) },
            sequence: .random(in: 0 ... .max, using: &generator), key: maybe { string(using: &$0) }, status: status,
            output: status == .succeeded ? maybe { value(using: &$0) } : nil,
            error: status == .failed
                ? JobError(code: text, message: "failed: \(text)", retryable: .random(using: &generator)) : nil,
            cancellation: status == .cancelled ? Cancellation(reason: text, message: "cancelled: \(text)") : nil,
            attempt: .random(in: .min ... .max, using: &generator), redelivered: .random(using: &generator),
            requeuedAt: maybe { date(using: &$0) }, workerID: "host-\(text)",
            timings: JobTimings(
                enqueuedAt: maybe { date(using: &$0) }, receivedAt: maybe { date(using: &$0) },
                startedAt: maybe { date(using: &$0) }, finishedAt: maybe { date(using: &$0) }))
    }

    // MARK: - Rewriting JSON text

    /// `bytes` with a run of random whitespace around every token (never inside strings).
    static func withWhitespace(_ bytes: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
        let whitespace = Array(" \t\n\r".utf8)
        func run() -> [UInt8] {
            (0..<Int.random(in: 0...3, using: &generator)).map { _ in whitespace.randomElement(using: &generator)! }
        }
        var result = run()
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                result.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    result += run()
                }
                continue
            }
            if Array("{}[],:".utf8).contains(byte) {
                result += run() + [byte] + run()
            } else {
                if byte == UInt8(ascii: "\"") { inString = true }
                result.append(byte)
            }
        }
        return result + run()
    }

    /// `bytes` with characters inside strings replaced by escapes at random: `\uXXXX` in either case of hex
    /// (surrogate pairs beyond the BMP) and `\/`. Escapes already there are kept.
    static func withEscapes(_ bytes: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
        func hex(_ unit: UInt16) -> String {
            let digits = String(unit, radix: 16)
            let padded = String(repeating: "0", count: 4 - digits.count) + digits
            return "\\u" + (Bool.random(using: &generator) ? padded.uppercased() : padded)
        }
        var result = ""
        var inString = false
        var verbatim = 0  // characters of an escape already in the text, to copy as they are
        var escapedAny = false
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            if verbatim > 0 {
                verbatim = verbatim == 1 && scalar == "u" ? 4 : verbatim - 1
            } else if scalar == "\\" && inString {
                verbatim = 1
            } else if scalar == "\"" {
                inString.toggle()
            } else if inString && Int.random(in: 0..<3, using: &generator) == 0 {
                escapedAny = true
                result +=
                    scalar == "/" && Bool.random(using: &generator) ? #"\/"# : String(scalar).utf16.map(hex).joined()
                continue
            }
            result.unicodeScalars.append(scalar)
        }
        // Every descriptor has a string ("version" is a key): escape its first letter if nothing else was.
        if !escapedAny { result = result.replacingOccurrences(of: "\"version\"", with: #""\u0076ersion""#) }
        return Array(result.utf8)
    }
}
