import Foundation
import Warren

extension Producer {
    /// A producer on the test broker (or at `url`) with a private sequence file.
    static func forTests(url: String? = nil, priorityQueues: Bool = false, quorumQueues: Bool = false) throws
        -> Producer
    {
        let directory = try TestEnvironment.temporaryDirectory()
        return try Producer(
            url: try url ?? TestEnvironment.brokerURL,
            sequences: SequenceStore(path: directory.appendingPathComponent("sequence").path),
            priorityQueues: priorityQueues, quorumQueues: quorumQueues)
    }
}

extension JSONValue {
    /// `{"numbers": [...], "delayMs": delay}` for the built-in `sum`.
    static func numbers(_ numbers: [Int], delayMs: Int = 0) -> JSONValue {
        .object(["numbers": .array(numbers.map { .number(Double($0)) }), "delayMs": .number(Double(delayMs))])
    }
}
