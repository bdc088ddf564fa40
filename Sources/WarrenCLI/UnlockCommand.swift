import ArgumentParser
import Warren

/// `warren unlock`: frees unique jobs' locks by hand.
struct UnlockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlock",
        abstract:
            "Free the unique lock of each key, whoever holds it, so that the next unique job of the key is enqueued.",
        discussion: """
            A lock frees itself when its job ends or its --unique-for passes; this is for a lock you know is stale. \
            The job that held it is not cancelled (use warren cancel). Prints, per key, the job that held the lock \
            or that it was free.
            Example:
              warren unlock report:42
            """)

    @OptionGroup var broker: BrokerOptions

    @Argument(help: "The keys whose locks to free.")
    var keys: [String] = []

    func validate() throws {
        if keys.isEmpty { throw ValidationError("name the keys whose locks to free") }
        if let problem = keys.lazy.compactMap(OperationDescriptor.problem(withUniqueKey:)).first {
            throw ValidationError(problem)
        }
    }

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        for key in keys {
            if let holder = try producer.unlock(key: key) {
                print("\(key): freed (held by job \(ResultPrinter.printable(holder)))")
            } else {
                print("\(key): was free")
            }
        }
    }
}
