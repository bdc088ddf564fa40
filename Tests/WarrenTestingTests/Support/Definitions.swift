import Foundation
import Warren

/// Upper-cases its text; asynchronous.
enum Shout: OperationDefinition {
    static let type = "shout"
    struct Input: Codable, Sendable { var text: String }
    struct Output: Codable, Sendable, Equatable { var text: String }
}

/// Adds its numbers and the sums of its dependencies; blocking.
enum Add: OperationDefinition {
    static let type = "add"
    struct Input: Codable, Sendable { var numbers: [Int] }
    struct Output: Codable, Sendable, Equatable { var sum: Int }
}

/// Reports progress and runs until cancelled; blocking.
enum Spin: OperationDefinition {
    static let type = "spin"
    struct Input: Codable, Sendable {}
    struct Output: Codable, Sendable {}
}

/// The producer's view of `add` after its output changed: `sum` became a string.
enum AddAsText: OperationDefinition {
    static let type = "add"
    typealias Input = Add.Input
    struct Output: Codable, Sendable { var sum: String }
}

/// Returns a ratio that JSON cannot hold when asked to.
enum Ratio: OperationDefinition {
    static let type = "ratio"
    struct Input: Codable, Sendable {
        var numerator: Double
        var denominator: Double
    }
    struct Output: Codable, Sendable { var ratio: Double }
}

/// Fails, retryably, until its attempt reaches `succeedFrom`.
enum Flaky: OperationDefinition {
    static let type = "flaky"
    struct Input: Codable, Sendable { var succeedFrom: Int }
    struct Output: Codable, Sendable, Equatable { var attempt: Int }
}

extension OperationRegistry {
    /// The operations of these tests.
    static var testing: OperationRegistry {
        var registry = OperationRegistry()
        registry.register(Shout.self) { input, _ in
            await Task.yield()
            return Shout.Output(text: input.text.uppercased())
        }
        registry.register(Add.self) { input, job in
            let dependencySums = try job.dependencyResults.map { try $0.outcome(as: Add.self).get().sum }
            return Add.Output(sum: input.numbers.reduce(0, +) + dependencySums.reduce(0, +))
        }
        registry.register(
            Spin.self,
            blocking: { _, job in
                var turns = 0
                while !job.isCancelled {
                    turns += 1
                    job.reportProgress(min(Double(turns) / 1000, 0.99), message: "turn \(turns)")
                    Thread.sleep(forTimeInterval: 0.001)
                }
                throw CancellationError()
            })
        registry.register(Ratio.self) { input, _ in Ratio.Output(ratio: input.numerator / input.denominator) }
        registry.register(Flaky.self) { input, job in
            guard job.attempt >= input.succeedFrom else {
                throw JobError(code: "flaky", message: "attempt \(job.attempt) fails", retryable: true)
            }
            return Flaky.Output(attempt: job.attempt)
        }
        return registry
    }
}
