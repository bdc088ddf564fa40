import ArgumentParser
import Foundation

/// The settings of `warren worker` that come from the environment and from a settings file, below the command line:
/// a flag beats the environment, which beats the file, which beats the default.
///
/// ```
/// # /etc/warren/worker.env: the same names as in the environment
/// WARREN_URL=amqp://warren:secret@rabbitmq:5672/%2F
/// WARREN_QUEUE=emails,reports
/// WARREN_LOCAL_QUEUE=io=32
/// WARREN_MAX_MEMORY=2G
/// WARREN_PRIORITY_QUEUES=true
/// ```
///
/// Option `--some-name` is `WARREN_SOME_NAME`. Options given several times take a comma-separated list, which
/// replaces the whole list of the level below. A flag takes `true` or `false`. An empty value counts as unset. The
/// file holds one `NAME=value` a line; `#` starts a comment line, and quotes around a value are dropped.
///
/// Thread safety: immutable.
struct WorkerSettings {
    /// The options of `warren worker` that settings can give, by long name: all but `--config` and `--help`.
    static let options: Set<String> = [
        "url", "queue", "width", "local-queue", "assign", "rate-limit", "fleet-rate-limit", "time-limit", "prefetch",
        "priority-queues", "quorum-queues", "worker-id", "grace", "wait-for-broker", "max-message-bytes",
        "max-nesting-depth", "max-dependencies", "max-parked-jobs", "max-crashes", "max-jobs", "max-memory",
        "schedule", "log-level", "log-format", "metrics-port", "metrics-host",
    ]

    /// The variable that names the settings file.
    static let fileVariable = "WARREN_CONFIG"

    /// The environment and file name of option `option`: `local-queue` is `WARREN_LOCAL_QUEUE`.
    static func variable(for option: String) -> String {
        "WARREN_" + option.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Where a value came from, for messages: `WARREN_WIDTH in the environment`.
    struct Found {
        let value: String
        let source: String
    }

    private let environment: [String: String]
    /// The file's settings, by variable name, with their line numbers.
    private let file: [String: (value: String, line: Int)]
    /// The file's path, as given.
    let path: String?

    /// The settings of `environment` and of the settings file: `path` (the `--config` option), else the file
    /// `WARREN_CONFIG` names, else none.
    /// - Throws: `ValidationError` when the file cannot be read or breaks the format.
    init(environment: [String: String], path: String?) throws {
        let named = path ?? environment[Self.fileVariable].flatMap { $0.isEmpty ? nil : $0 }
        var text = ""
        if let named {
            do {
                text = try String(contentsOfFile: named, encoding: .utf8)
            } catch {
                let option = path == nil ? "\(Self.fileVariable)=\(named)" : "--config \(named)"
                throw ValidationError("\(option): cannot read it: \(error.localizedDescription)")
            }
        }
        try self.init(environment: environment, fileText: text, path: named)
    }

    /// The settings of `environment` and of a file that holds `fileText`, read from `path`.
    /// - Throws: `ValidationError` naming the line of `fileText` that breaks the format.
    init(environment: [String: String], fileText: String, path: String?) throws {
        self.environment = environment
        self.path = path
        var file: [String: (value: String, line: Int)] = [:]
        let known = Set(Self.options.map(Self.variable(for:)))
        for (index, rawLine) in fileText.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let number = index + 1
            let at = "--config \(path ?? "-"), line \(number)"
            guard let equals = line.firstIndex(of: "=") else {
                throw ValidationError("\(at): expected NAME=value, e.g. WARREN_WIDTH=8")
            }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard known.contains(name) else {
                let why =
                    name == Self.fileVariable
                    ? "a settings file cannot name another"
                    : "no setting of warren worker: the names are WARREN_ and an option's name, as WARREN_MAX_MEMORY"
                throw ValidationError("\(at): \(name): \(why)")
            }
            if let earlier = file[name] {
                throw ValidationError("\(at): \(name) is set on line \(earlier.line) already")
            }
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            file[name] = (Self.unquoted(value), number)
        }
        self.file = file
    }

    /// `value` without the matching quotes around it, if it has them.
    private static func unquoted(_ value: String) -> String {
        guard value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first else {
            return value
        }
        return String(value.dropFirst().dropLast())
    }

    /// The value of option `option`: the environment's, else the file's; `nil` when neither sets it.
    func found(_ option: String) -> Found? {
        let name = Self.variable(for: option)
        if let value = environment[name], !value.isEmpty {
            return Found(value: value, source: "\(name) in the environment")
        }
        if let (value, line) = file[name], !value.isEmpty {
            return Found(value: value, source: "\(name) in \(path ?? "-"), line \(line)")
        }
        return nil
    }

    /// The value of option `option` as `T` reads it on the command line.
    /// - Throws: `ValidationError` naming the setting when `T` does not read it.
    func value<T: ExpressibleByArgument>(_ option: String, as type: T.Type = T.self) throws -> T? {
        guard let found = found(option) else { return nil }
        guard let value = T(argument: found.value) else {
            throw ValidationError("\(found.source): '\(found.value)' is not a valid value for --\(option)")
        }
        return value
    }

    /// The values of an option given several times: a comma-separated list.
    /// - Throws: `ValidationError` for an empty entry.
    func list(_ option: String) throws -> [String]? {
        guard let found = found(option) else { return nil }
        let entries = found.value.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard !entries.contains(where: \.isEmpty) else {
            throw ValidationError("\(found.source): '\(found.value)' has an empty entry (a comma too many?)")
        }
        return entries
    }

    /// The value of a flag: `true` or `false`.
    /// - Throws: `ValidationError` for any other value.
    func flag(_ option: String) throws -> Bool? {
        guard let found = found(option) else { return nil }
        switch found.value.lowercased() {
        case "true": return true
        case "false": return false
        default: throw ValidationError("\(found.source): '\(found.value)' is neither true nor false")
        }
    }
}
