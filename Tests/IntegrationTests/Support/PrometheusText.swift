import Foundation

/// A strict reader of Prometheus's text exposition format (version 0.0.4), for checking what `/metrics` serves.
///
/// It checks every line: `# HELP name text`, `# TYPE name kind` (once per family, before its samples), and samples
/// `name{label="value",...} value [timestamp]` with valid names, escaped label values and numbers; no series twice;
/// counters not negative; each histogram with cumulative buckets ending in `le="+Inf"`, equal to its `_count`,
/// and a `_sum`.
struct PrometheusText {
    struct Sample: Hashable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Problem: Error, CustomStringConvertible {
        let line: Int
        let text: String
        let reason: String
        var description: String { "line \(line): \(reason): \(text)" }
    }

    private(set) var samples: [Sample] = []
    /// Family name → kind, from `# TYPE`.
    private(set) var types: [String: String] = [:]
    private(set) var help: [String: String] = [:]

    /// Parses and checks `text`.
    /// - Throws: ``Problem`` naming the first line that breaks the format.
    init(_ text: String) throws {
        guard text.isEmpty || text.hasSuffix("\n") else {
            throw Problem(line: 0, text: String(text.suffix(40)), reason: "the text does not end with a newline")
        }
        var sampled: Set<String> = []
        var series: Set<String> = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            let number = index + 1
            func problem(_ reason: String) -> Problem { Problem(line: number, text: String(line), reason: reason) }
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true).map(String.init)
                guard parts.count >= 2, parts[0] == "#", ["HELP", "TYPE"].contains(parts[1]) else { continue }
                guard parts.count >= 3, Self.isMetricName(parts[2]) else { throw problem("bad metric name") }
                let name = parts[2]
                if parts[1] == "HELP" {
                    guard help[name] == nil else { throw problem("a second HELP for \(name)") }
                    help[name] = parts.count == 4 ? parts[3] : ""
                } else {
                    guard parts.count == 4,
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3])
                    else { throw problem("bad TYPE") }
                    guard types[name] == nil else { throw problem("a second TYPE for \(name)") }
                    guard !sampled.contains(name) else { throw problem("TYPE after samples of \(name)") }
                    types[name] = parts[3]
                }
                continue
            }
            var scanner = LineScanner(Substring(line))
            guard let name = scanner.metricName() else { throw problem("bad metric name") }
            let labels: [String: String]
            do {
                labels = try scanner.labels()
            } catch let reason as LineScanner.Failure {
                throw problem(reason.reason)
            }
            guard scanner.skipSpaces(), let value = scanner.number() else { throw problem("bad value") }
            if scanner.skipSpaces() {
                guard let timestamp = scanner.word(), Int64(timestamp) != nil else { throw problem("bad timestamp") }
                _ = scanner.skipSpaces()
            }
            guard scanner.isAtEnd else { throw problem("unexpected text after the value") }
            let family = Self.family(of: name, types: types)
            sampled.insert(family)
            let key =
                name + "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            guard series.insert(key).inserted else { throw problem("the same series twice") }
            if types[family] == "counter", value < 0 { throw problem("a negative counter") }
            if name.hasSuffix("_bucket"), types[family] == "histogram", labels["le"] == nil {
                throw problem("a histogram bucket without le")
            }
            samples.append(Sample(name: name, labels: labels, value: value))
        }
        try checkHistograms()
    }

    /// The value of the sample `name` whose labels are exactly `labels`.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// The sample's family: `x` for `x_bucket`, `x_sum`, `x_count` of a histogram or summary `x`.
    private static func family(of name: String, types: [String: String]) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if ["histogram", "summary"].contains(types[base]) { return base }
        }
        return name
    }

    private func checkHistograms() throws {
        for (family, kind) in types where kind == "histogram" {
            let buckets = samples.filter { $0.name == family + "_bucket" }
            let groups = Dictionary(grouping: buckets) { $0.labels.filter { $0.key != "le" } }
            for (labels, group) in groups {
                let series = "\(family)\(labels.sorted { $0.key < $1.key })"
                let sorted = try group.map { sample -> (Double, Double) in
                    guard let le = sample.labels["le"].flatMap(Self.parseNumber) else {
                        throw Problem(line: 0, text: series, reason: "a bucket's le is not a number")
                    }
                    return (le, sample.value)
                }.sorted { $0.0 < $1.0 }
                guard sorted.last?.0 == .infinity else {
                    throw Problem(line: 0, text: series, reason: "no le=\"+Inf\" bucket")
                }
                for (lower, upper) in zip(sorted, sorted.dropFirst()) where upper.1 < lower.1 {
                    throw Problem(line: 0, text: series, reason: "buckets are not cumulative")
                }
                guard value(family + "_count", labels) == sorted.last?.1 else {
                    throw Problem(line: 0, text: series, reason: "_count differs from the +Inf bucket")
                }
                guard value(family + "_sum", labels) != nil else {
                    throw Problem(line: 0, text: series, reason: "no _sum")
                }
            }
        }
    }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" || first == ":" else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" || $0 == ":" }
    }

    static func parseNumber(_ text: String) -> Double? {
        switch text {
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            return text.isEmpty || text.contains(where: { $0.isLetter && $0 != "e" && $0 != "E" }) ? nil : Double(text)
        }
    }
}

/// Reads one sample line.
private struct LineScanner {
    struct Failure: Error {
        let reason: String
    }

    private var rest: Substring

    init(_ line: Substring) {
        rest = line
    }

    var isAtEnd: Bool { rest.isEmpty }

    mutating func metricName() -> String? {
        let name = rest.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") }
        guard PrometheusText.isMetricName(String(name)) else { return nil }
        rest = rest.dropFirst(name.count)
        return String(name)
    }

    mutating func labels() throws -> [String: String] {
        guard rest.first == "{" else { return [:] }
        rest = rest.dropFirst()
        var labels: [String: String] = [:]
        while rest.first != "}" {
            let name = String(rest.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" else {
                throw Failure(reason: "bad label name")
            }
            rest = rest.dropFirst(name.count)
            guard rest.hasPrefix("=\"") else { throw Failure(reason: "label \(name) has no quoted value") }
            rest = rest.dropFirst(2)
            var value = ""
            while true {
                guard let character = rest.popFirst() else { throw Failure(reason: "unterminated label value") }
                if character == "\"" { break }
                if character == "\n" { throw Failure(reason: "a raw newline in a label value") }
                guard character == "\\" else {
                    value.append(character)
                    continue
                }
                switch rest.popFirst() {
                case "\\": value.append("\\")
                case "\"": value.append("\"")
                case "n": value.append("\n")
                default: throw Failure(reason: "a bad escape in label \(name)")
                }
            }
            guard labels.updateValue(value, forKey: name) == nil else { throw Failure(reason: "label \(name) twice") }
            if rest.first == "," {
                rest = rest.dropFirst()
            } else if rest.first != "}" {
                throw Failure(reason: "expected , or } after label \(name)")
            }
        }
        rest = rest.dropFirst()
        return labels
    }

    /// Skips spaces; whether there were any.
    mutating func skipSpaces() -> Bool {
        let spaces = rest.prefix { $0 == " " || $0 == "\t" }
        rest = rest.dropFirst(spaces.count)
        return !spaces.isEmpty
    }

    mutating func word() -> String? {
        let word = rest.prefix { $0 != " " && $0 != "\t" }
        guard !word.isEmpty else { return nil }
        rest = rest.dropFirst(word.count)
        return String(word)
    }

    mutating func number() -> Double? {
        word().flatMap(PrometheusText.parseNumber)
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
