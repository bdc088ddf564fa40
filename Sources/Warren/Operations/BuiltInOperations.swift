import Foundation

/// Input of the built-in `sum` operation: ListAdder's `AdderOperation`.
public struct SumInput: Codable, Sendable {
    public var numbers: [Int]
    /// Milliseconds to sleep before adding each number, so cancellation can be watched. Default: 0.
    public var delayMs: Int?

    public init(numbers: [Int], delayMs: Int? = nil) {
        self.numbers = numbers
        self.delayMs = delayMs
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

    public init(code: String? = nil, message: String? = nil, retryable: Bool? = nil, succeedFromAttempt: Int? = nil) {
        self.code = code
        self.message = message
        self.retryable = retryable
        self.succeedFromAttempt = succeedFromAttempt
    }
}

extension OperationRegistry {
    /// A registry holding the built-in operation types, for demos and tests:
    /// - `sum` (blocking): adds `numbers`, sleeping `delayMs` before each, checking for cancellation between them and
    ///   reporting progress.
    /// - `sleep` (asynchronous): waits `seconds` without holding a thread; cancellable.
    /// - `echo` (blocking): returns its input.
    /// - `fail` (blocking): fails with `code` (default `requestedFailure`), `message` and `retryable`; with
    ///   `succeedFromAttempt`, succeeds from that attempt on.
    public static var builtIn: OperationRegistry {
        var registry = OperationRegistry()
        registry.register("sum", blocking: sum)
        registry.register("sleep", asynchronous: { (input: SleepInput, _: JobContext) in
            guard (0...SleepInput.maxSeconds).contains(input.seconds) else {
                throw JobError(
                    code: "invalidInput",
                    message: "input.seconds: \(input.seconds) is outside 0...\(Int(SleepInput.maxSeconds))")
            }
            try await Task.sleep(for: .seconds(input.seconds))
            return ["slept": input.seconds]
        })
        registry.register("echo", blocking: { (input: JSONValue, _: JobContext) in input })
        registry.register("fail", blocking: { (input: FailInput, job: JobContext) -> JSONValue in
            if let from = input.succeedFromAttempt, job.attempt >= from { return ["attempt": .number(Double(job.attempt))] }
            throw JobError(
                code: input.code ?? "requestedFailure", message: input.message ?? "failed on request",
                retryable: input.retryable ?? false)
        })
        return registry
    }

    @Sendable private static func sum(_ input: SumInput, job: JobContext) throws -> SumOutput {
        var total = 0
        for (index, number) in input.numbers.enumerated() {
            job.reportProgress(Double(index) / Double(input.numbers.count), message: "adding \(number)")
            try sleep(milliseconds: input.delayMs ?? 0, job: job)
            try job.checkCancellation()
            let (sum, overflows) = total.addingReportingOverflow(number)
            guard !overflows else {
                throw JobError(
                    code: "invalidInput", message: "input.numbers[\(index)]: the sum leaves the 64-bit integer range")
            }
            total = sum
        }
        return SumOutput(sum: total, formattedSum: total.formatted())
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
