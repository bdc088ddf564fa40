import ArgumentParser
import Warren

/// `--queue` values that name job queues: a name that cannot hold jobs (``Topology/problem(withJobQueue:)``) is
/// a bad argument.
enum QueueArgument {
    static func validate(_ names: some Sequence<String>) throws {
        if let problem = names.lazy.compactMap(Topology.problem(withJobQueue:)).first {
            throw ValidationError("--queue: \(problem)")
        }
    }
}
