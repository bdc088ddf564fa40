import Warren

/// The jobs the benchmark runs.
enum BenchJobs {
    /// The input of every no-op `echo` job (and so its output).
    static let echoInput: JSONValue = ["bench": true]

    /// A `sum` that runs for seconds, sleeping 1 ms before each number and checking for cancellation after it.
    static let longSum: JSONValue = .object([
        "numbers": .array(Array(repeating: .number(1), count: 5_000)), "delayMs": .number(1),
    ])

    /// Job ids `PREFIX0`, `PREFIX1`, … (letters, digits and `-`: valid Warren ids and routing keys).
    static func ids(_ prefix: String, count: Int) -> [String] {
        (0..<count).map { "\(prefix)\($0)" }
    }
}
