import Foundation
import Warren

/// A submission of jobs that depend on each other, for `warren enqueue --graph FILE.json`:
///
/// ```json
/// {"jobs": [
///   {"name": "fetch", "type": "sleep", "input": {"seconds": 1}},
///   {"name": "total", "type": "sum", "input": {"numbers": [1, 2]}, "dependsOn": ["fetch"], "requireSuccess": true}
/// ]}
/// ```
///
/// Names are local to the file: each job gets a fresh id. A `dependsOn` entry that is no name in the file is the
/// id of a job enqueued earlier with the same state directory (`$WARREN_STATE_DIR`).
struct GraphFile: Decodable {
    struct Job: Decodable {
        var name: String
        var type: String
        var input: JSONValue?
        var priority: JobPriority?
        var key: String?
        var queue: String?
        var dependsOn: [String]?
        var requireSuccess: Bool?
        var maxAttempts: Int?
        /// Seconds from now after which the job does not start.
        var deadline: Seconds?
        /// Seconds from now before which the job does not start.
        var delay: Seconds?
        /// Seconds the job's code may run.
        var timeLimit: Seconds?
        /// Seconds the job holds its key's unique lock at most.
        var uniqueFor: Seconds?
    }

    /// A length of time: a JSON number of seconds, or a string as the command line takes one (`"90"`, `"250ms"`,
    /// `"30s"`, `"10m"`, `"2h"`, `"1d"`).
    ///
    /// Thread safety: immutable.
    struct Seconds: Decodable {
        let value: Double

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Double.self) {
                value = number
            } else if let text = try? container.decode(String.self), let span = TimeSpan(argument: text) {
                value = span.seconds
            } else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "expected seconds: a number, or a string such as \"30s\" or \"10m\"")
            }
        }
    }

    var jobs: [Job]

    /// The members a job may have: any other is a mistake (`depends_on` for `dependsOn`) that would drop what it
    /// meant silently.
    static let jobMembers: Set<String> = [
        "name", "type", "input", "priority", "key", "queue", "dependsOn", "requireSuccess", "maxAttempts", "deadline",
        "delay", "timeLimit", "uniqueFor",
    ]

    /// Reads and checks the file.
    static func load(_ path: String) throws -> GraphFile {
        guard let data = InputFile.contents(of: path) else {
            throw GraphFileError("cannot read the graph file '\(path)'")
        }
        guard String(validating: data, as: UTF8.self) != nil else {
            throw GraphFileError("the graph file '\(path)' is not UTF-8 text")
        }
        let shape = "{\"jobs\": [{\"name\", \"type\", …}]}"
        if let offset = JSONText.trailingCommaOffset(in: Array(data)) {
            throw GraphFileError(
                "the graph file '\(path)' is not JSON: a comma before a closing bracket at byte \(offset)")
        }
        if let problem = InputNesting.problem(in: Array(data), levelsAbove: 3) {
            throw GraphFileError("the graph file '\(path)': a job's input \(problem)")
        }
        let graph: GraphFile
        do {
            try checkMembers(of: try JSONDecoder().decode(JSONValue.self, from: data))
            graph = try JSONDecoder().decode(GraphFile.self, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw GraphFileError("the graph file '\(path)' is not JSON")
            }
            throw GraphFileError("the graph file '\(path)' is not \(shape): \(error.summary(root: ""))")
        } catch let error as GraphFileError {
            throw GraphFileError("the graph file '\(path)' is not \(shape): \(error.description)")
        }
        guard !graph.jobs.isEmpty else { throw GraphFileError("the graph file '\(path)' lists no jobs") }
        var names: Set<String> = []
        for job in graph.jobs where !names.insert(job.name).inserted {
            throw GraphFileError("the graph file names job '\(job.name)' twice")
        }
        for job in graph.jobs {
            if job.name.isEmpty { throw GraphFileError("a job's name is empty") }
            // `NAME ID` lines must read back unambiguously.
            if job.name.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
            }) {
                throw GraphFileError(
                    "job '\(ResultPrinter.printable(job.name))': a name has no spaces or control characters")
            }
            if let problem = OperationDescriptor.problem(withType: job.type) {
                throw GraphFileError("job '\(job.name)': \(problem)")
            }
            if job.requireSuccess == true && (job.dependsOn ?? []).isEmpty {
                throw GraphFileError("job '\(job.name)': requireSuccess needs dependsOn")
            }
            if let deadline = job.deadline?.value, !(deadline > 0 && deadline.isFinite) {
                throw GraphFileError(
                    "job '\(job.name)': deadline must be a number of seconds above 0 (got \(deadline))")
            }
            if let attempts = job.maxAttempts, attempts < 1 {
                throw GraphFileError("job '\(job.name)': maxAttempts must be at least 1 (got \(attempts))")
            }
            if let delay = job.delay?.value, !(delay >= 0 && delay.isFinite) {
                throw GraphFileError("job '\(job.name)': delay must be a number of seconds, 0 or more (got \(delay))")
            }
            if let timeLimit = job.timeLimit?.value, let problem = OperationDescriptor.problem(withTimeLimit: timeLimit)
            {
                throw GraphFileError("job '\(job.name)': timeLimit: \(problem)")
            }
            if let uniqueFor = job.uniqueFor?.value,
                let problem = UniqueLock.problem(withLifetime: uniqueFor)
                    ?? OperationDescriptor.problem(withUniqueKey: job.key)
            {
                throw GraphFileError("job '\(job.name)': uniqueFor: \(problem)")
            }
        }
        if let warning = InputNesting.warning(in: Array(data), levelsAbove: 3) {
            StandardErrorLines.write("warren: warning: the graph file '\(path)': a job's input \(warning)\n")
        }
        return graph
    }

    /// Refuses members the file format does not have, at the top and in each job.
    private static func checkMembers(of document: JSONValue) throws {
        guard case .object(let top) = document else { return }
        if let unknown = top.keys.sorted().first(where: { $0 != "jobs" }) {
            throw GraphFileError("unknown member '\(unknown)'")
        }
        guard case .array(let jobs)? = top["jobs"] else { return }
        for (index, job) in jobs.enumerated() {
            guard case .object(let members) = job else { continue }
            if let unknown = members.keys.sorted().first(where: { !jobMembers.contains($0) }) {
                throw GraphFileError(
                    "jobs[\(index)]: unknown member '\(unknown)' (a job has \(jobMembers.sorted().joined(separator: ", ")))"
                )
            }
        }
    }

    /// The requests, with names turned into fresh ids, and the name of each id.
    func requests(defaultQueue: String) -> (requests: [JobRequest], names: [String: String]) {
        let ids = Dictionary(uniqueKeysWithValues: jobs.map { ($0.name, UUID().uuidString.lowercased()) })
        let requests = jobs.map { job in
            JobRequest(
                type: job.type, input: job.input ?? .null, priority: job.priority ?? .normal, key: job.key,
                queue: job.queue ?? defaultQueue, deadline: job.deadline.map { Date(timeIntervalSinceNow: $0.value) },
                notBefore: job.delay.map { Date(timeIntervalSinceNow: $0.value) }, maxAttempts: job.maxAttempts,
                timeLimit: job.timeLimit.map { .seconds($0.value) },
                uniqueFor: job.uniqueFor.map { .seconds($0.value) },
                dependencies: (job.dependsOn ?? []).map { ids[$0] ?? $0 }, requireSuccess: job.requireSuccess ?? false,
                id: ids[job.name]!)
        }
        return (requests, Dictionary(uniqueKeysWithValues: ids.map { ($1, $0) }))
    }
}

struct GraphFileError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
