/// Checks the dependencies of jobs about to be enqueued together, before anything is published.
///
/// Thread safety: a value type, used on one thread.
enum DependencyGraph {
    /// The requests in an order where every job comes after the jobs of the same submission it depends on.
    /// - Parameter known: The dependency ids, outside the submission, that name jobs enqueued earlier.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a duplicate id, a job that depends on itself, an
    ///   unknown id or a cycle, naming the jobs involved.
    static func ordered(_ requests: [JobRequest], known: Set<String>) throws -> [JobRequest] {
        var byID: [String: JobRequest] = [:]
        for request in requests {
            guard byID.updateValue(request, forKey: request.id) == nil else {
                throw WarrenError(.invalidConfiguration, "job id \(request.id) appears twice")
            }
        }
        for request in requests {
            if request.dependencies.contains(request.id) {
                throw WarrenError(.invalidConfiguration, "job \(request.id) depends on itself")
            }
            let unknown = request.dependencies.filter { byID[$0] == nil && !known.contains($0) }
            if !unknown.isEmpty {
                throw WarrenError(
                    .invalidConfiguration,
                    "job \(request.id) depends on unknown job\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")) "
                        + "(neither in this submission nor enqueued earlier from this host)")
            }
        }
        // Kahn's algorithm over the edges inside the submission.
        var waiting = byID.mapValues { Set($0.dependencies.filter { byID[$0] != nil }) }
        var ordered: [JobRequest] = []
        var ready = requests.filter { waiting[$0.id]!.isEmpty }.map(\.id)
        while let id = ready.first {
            ready.removeFirst()
            ordered.append(byID[id]!)
            waiting[id] = nil
            for request in requests where waiting[request.id]?.remove(id) != nil && waiting[request.id]!.isEmpty {
                ready.append(request.id)
            }
        }
        guard waiting.isEmpty else {
            throw WarrenError(
                .invalidConfiguration,
                "dependency cycle among jobs \(waiting.keys.sorted().joined(separator: ", "))")
        }
        return ordered
    }
}
