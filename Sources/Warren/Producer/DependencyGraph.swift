/// Checks the dependencies of jobs about to be enqueued together, before anything is published.
///
/// Thread safety: a value type, used on one thread.
package enum DependencyGraph {
    /// The requests in an order where every job comes after the jobs of the same submission it depends on.
    /// - Parameter known: The dependency ids, outside the submission, that name jobs enqueued earlier; a request
    ///   that does not check its dependencies (``JobRequest/checksDependencies``) may name others.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a duplicate id, a job that depends on itself, an
    ///   unknown id or a cycle, naming the jobs involved.
    package static func ordered(_ requests: [JobRequest], known: Set<String>) throws -> [JobRequest] {
        if requests.allSatisfy({ $0.dependencies.isEmpty }) {
            // No edges: the submission's own order will do, once its ids are unique.
            if requests.count > 1 {
                var ids = Set<String>(minimumCapacity: requests.count)
                for request in requests where !ids.insert(request.id).inserted {
                    throw WarrenError(.invalidConfiguration, "job id \(request.id) appears twice")
                }
            }
            return requests
        }
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
            if let problem = request.dependencies.lazy.compactMap(OperationDescriptor.problem(withID:)).first {
                throw WarrenError(
                    .invalidConfiguration, "job \(request.id) has a dependency that is no job id: \(problem)")
            }
            guard request.checksDependencies else { continue }
            let unknown = request.dependencies.filter { byID[$0] == nil && !known.contains($0) }
            if !unknown.isEmpty {
                throw WarrenError(
                    .invalidConfiguration,
                    "job \(request.id) depends on unknown job\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")) "
                        + "(neither in this submission nor enqueued earlier with this state directory, WARREN_STATE_DIR)"
                )
            }
        }
        // Kahn's algorithm over the edges inside the submission: linear in jobs and edges.
        var waitingOn: [String: Int] = [:]
        var dependents: [String: [String]] = [:]
        for request in requests {
            let inside = Set(request.dependencies.filter { byID[$0] != nil })
            waitingOn[request.id] = inside.count
            for dependency in inside { dependents[dependency, default: []].append(request.id) }
        }
        var ready = requests.filter { waitingOn[$0.id] == 0 }.map(\.id)
        var ordered: [JobRequest] = []
        ordered.reserveCapacity(requests.count)
        while ordered.count < ready.count {
            let id = ready[ordered.count]
            ordered.append(byID[id]!)
            for dependent in dependents[id] ?? [] {
                waitingOn[dependent]! -= 1
                if waitingOn[dependent] == 0 { ready.append(dependent) }
            }
        }
        guard ordered.count == requests.count else {
            let cycle = Self.cycle(among: Set(waitingOn.filter { $0.value > 0 }.keys), byID: byID)
            throw WarrenError(.invalidConfiguration, "dependency cycle: \(cycle.joined(separator: " -> "))")
        }
        return ordered
    }

    /// One cycle among `left`, the jobs Kahn's algorithm could not order, as a path that ends where it began
    /// (`a -> b -> a`): each of them waits for one of them, so following dependencies inside `left` from any of
    /// them comes back to a job already passed. Jobs that only wait for the cycle are not in it.
    private static func cycle(among left: Set<String>, byID: [String: JobRequest]) -> [String] {
        var path: [String] = []
        var position: [String: Int] = [:]
        var id = left.min()!
        while position[id] == nil {
            position[id] = path.count
            path.append(id)
            id = byID[id]!.dependencies.filter(left.contains).min()!
        }
        return Array(path[position[id]!...]) + [id]
    }
}
