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
/// id of a job enqueued earlier from this host.
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
        var deadline: Double?
        /// Seconds from now before which the job does not start.
        var delay: Double?
    }

    var jobs: [Job]

    /// Reads and checks the file.
    static func load(_ path: String) throws -> GraphFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw GraphFileError("cannot read the graph file '\(path)'")
        }
        let graph: GraphFile
        do {
            graph = try JSONDecoder().decode(GraphFile.self, from: data)
        } catch {
            throw GraphFileError("the graph file '\(path)' is not {\"jobs\": [{\"name\", \"type\", …}]}: \(error)")
        }
        var names: Set<String> = []
        for job in graph.jobs where !names.insert(job.name).inserted {
            throw GraphFileError("the graph file names job '\(job.name)' twice")
        }
        for job in graph.jobs {
            if let delay = job.delay, !(delay >= 0 && delay.isFinite) {
                throw GraphFileError("job '\(job.name)': delay must be a number of seconds, 0 or more (got \(delay))")
            }
        }
        return graph
    }

    /// The requests, with names turned into fresh ids, and the name of each id.
    func requests(defaultQueue: String) -> (requests: [JobRequest], names: [String: String]) {
        let ids = Dictionary(uniqueKeysWithValues: jobs.map { ($0.name, UUID().uuidString.lowercased()) })
        let requests = jobs.map { job in
            JobRequest(
                type: job.type, input: job.input ?? .null, priority: job.priority ?? .normal, key: job.key,
                queue: job.queue ?? defaultQueue, deadline: job.deadline.map { Date(timeIntervalSinceNow: $0) },
                notBefore: job.delay.map { Date(timeIntervalSinceNow: $0) }, maxAttempts: job.maxAttempts,
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
