import Foundation

/// Input of the built-in `sum` operation: ListAdder's `AdderOperation`.
public struct SumInput: Codable, Sendable {
    /// The numbers to add; may be left out with ``addDependencySums``.
    public var numbers: [Int]
    /// Milliseconds to sleep before adding each number, so cancellation can be watched: 0 to an hour. Default: 0.
    public var delayMs: Int?

    /// The delays `sum` takes, in milliseconds: up to an hour.
    static let delays = 0...3_600_000
    /// Also add the `sum` of each of the job's dependencies (the reduce step after partial sums). Each must have
    /// succeeded with a `sum` output, else the job fails (`dependencyOutput`). Default: `false`.
    public var addDependencySums: Bool?

    public init(numbers: [Int], delayMs: Int? = nil, addDependencySums: Bool? = nil) {
        self.numbers = numbers
        self.delayMs = delayMs
        self.addDependencySums = addDependencySums
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        delayMs = try container.decodeIfPresent(Int.self, forKey: .delayMs)
        addDependencySums = try container.decodeIfPresent(Bool.self, forKey: .addDependencySums)
        numbers =
            addDependencySums == true
            ? try container.decodeIfPresent([Int].self, forKey: .numbers) ?? []
            : try container.decode([Int].self, forKey: .numbers)
    }
}

/// Output of the built-in `sum` operation.
public struct SumOutput: Codable, Sendable {
    public var sum: Int
    /// The numbers, formatted, as `AdderOperation` formats them.
    public var formattedSum: String
}

/// Input of the built-in `sleep` operation.
public struct SleepInput: Codable, Sendable {
    /// From 0 to ``maxSeconds``.
    public var seconds: Double
    /// The longest sleep: 1,000,000,000 s (about 32 years).
    public static let maxSeconds: Double = 1_000_000_000

    public init(seconds: Double) { self.seconds = seconds }
}

/// Input of the built-in `fail` operation.
public struct FailInput: Codable, Sendable {
    public var code: String?
    public var message: String?
    public var retryable: Bool?
    /// From this attempt on, succeed instead (to watch retries work). Default: never.
    public var succeedFromAttempt: Int?
    /// With `retryable`: seconds to wait before the next attempt (``JobError/retryAfter``). Default: the backoff.
    public var retryAfter: Double?

    public init(
        code: String? = nil, message: String? = nil, retryable: Bool? = nil, succeedFromAttempt: Int? = nil,
        retryAfter: Double? = nil
    ) {
        self.code = code
        self.message = message
        self.retryable = retryable
        self.succeedFromAttempt = succeedFromAttempt
        self.retryAfter = retryAfter
    }
}

extension OperationRegistry {
    /// Registers the demo operation types, which `warren worker` runs, for demos and tests:
    /// - `sum` (blocking): adds `numbers` (with `addDependencySums`, also its dependencies' sums), sleeping `delayMs`
    ///   before each, checking for cancellation between them and reporting progress.
    /// - `sleep` (asynchronous): waits `seconds` without holding a thread; cancellable.
    /// - `echo` (blocking): returns its input.
    /// - `fail` (blocking): fails with `code` (default `requestedFailure`), `message`, `retryable` and
    ///   `retryAfter` (seconds); with `succeedFromAttempt`, succeeds from that attempt on.
    ///
    /// A worker of your own runs them only when asked: `OperationRegistry()` holds none.
    public mutating func registerDemoOperations() {
        register("sum", blocking: Self.sum)
        register(
            "sleep",
            asynchronous: { (input: SleepInput, job: JobContext) in
                guard (0...SleepInput.maxSeconds).contains(input.seconds) else {
                    throw job.invalidInput(
                        "input.seconds: \(JSONWriter.text(of: input.seconds)) is outside 0...\(Int(SleepInput.maxSeconds))"
                    )
                }
                try await Task.sleep(for: .seconds(input.seconds))
                return ["slept": input.seconds]
            })
        register("echo", blocking: { (input: JSONValue, _: JobContext) in input })
        register(
            "fail",
            blocking: { (input: FailInput, job: JobContext) -> JSONValue in
                if let from = input.succeedFromAttempt, job.attempt >= from {
                    return ["attempt": .number(Double(job.attempt))]
                }
                if let after = input.retryAfter, !(0...JobError.maxRetryAfter.seconds).contains(after) {
                    throw job.invalidInput(
                        "input.retryAfter: \(JSONWriter.text(of: after)) is outside 0...\(Int(JobError.maxRetryAfter.seconds))"
                    )
                }
                throw JobError(
                    code: input.code ?? "requestedFailure", message: input.message ?? "failed on request",
                    retryable: input.retryable ?? false, retryAfter: input.retryAfter.map { .milliseconds($0 * 1000) })
            })
    }

    /// A registry holding only the demo operation types (``registerDemoOperations()``).
    public static var demo: OperationRegistry {
        var registry = OperationRegistry()
        registry.registerDemoOperations()
        return registry
    }

    /// A registry holding only the demo operation types.
    @available(*, deprecated, renamed: "demo", message: "start from OperationRegistry() and registerDemoOperations()")
    public static var builtIn: OperationRegistry { demo }

    @Sendable private static func sum(_ input: SumInput, job: JobContext) throws -> SumOutput {
        if let delay = input.delayMs, !SumInput.delays.contains(delay) {
            throw job.invalidInput(
                "input.delayMs: \(delay) is outside \(SumInput.delays.lowerBound)...\(SumInput.delays.upperBound)")
        }
        let terms =
            input.numbers.enumerated().map { ($0.element, "input.numbers[\($0.offset)]") }
            + (input.addDependencySums == true ? try dependencySums(of: job) : [])
        var total = 0
        for (index, (number, origin)) in terms.enumerated() {
            job.reportProgress(Double(index) / Double(terms.count), message: "adding \(number)")
            try sleep(milliseconds: input.delayMs ?? 0, job: job)
            try job.checkCancellation()
            let (sum, overflows) = total.addingReportingOverflow(number)
            guard !overflows else {
                let detail = "\(origin): the sum leaves the 64-bit integer range"
                // A dependency's sum is not this job's input: its message does not blame the input.
                throw index < input.numbers.count
                    ? job.invalidInput(detail) : JobError(code: "invalidInput", message: detail)
            }
            total = sum
        }
        return SumOutput(sum: total, formattedSum: total.formatted())
    }

    /// The `sum` of each dependency's output, in the order of the job's dependencies, each with where it came from.
    private static func dependencySums(of job: JobContext) throws -> [(Int, String)] {
        try job.dependencies.map { id in
            guard let result = job.dependencyResult(of: id) else {
                throw JobError(code: "dependencyOutput", message: "the result of dependency \(id) could not be read")
            }
            guard result.status == .succeeded else {
                throw JobError(code: "dependencyOutput", message: "dependency \(id) ended \(result.status.rawValue)")
            }
            struct Sum: Decodable { let sum: Int }
            guard let sum = try? result.output?.decode(as: Sum.self).sum else {
                throw JobError(
                    code: "dependencyOutput",
                    message: "dependency \(id) succeeded without an integer 'sum' in its output")
            }
            return (sum, "the sum of dependency \(id)")
        }
    }

    /// Sleeps `milliseconds` on the operation's thread, checking for cancellation at least every 10 ms.
    private static func sleep(milliseconds: Int, job: JobContext) throws {
        var left = Double(milliseconds) / 1000
        while left > 0 {
            try job.checkCancellation()
            let slice = min(left, 0.01)
            Thread.sleep(forTimeInterval: slice)
            left -= slice
        }
    }
}
