import ArgumentParser
import Warren

/// `warren pause`: workers stop taking jobs.
struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Stop workers taking jobs: executing ones go on, waiting ones go back to the broker.",
        discussion: """
            Workers started later (within a day) start paused too, until `warren resume`. With --worker, exits 1 \
            if no live worker of that id reports within --timeout, or it does not consume --queue; without it, \
            exits 1 before sending anything if the broker has no such --queue.
            Examples:
              warren pause
              warren pause --worker worker-2 --queue images
            """)

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var scope: ScopeOptions

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        try scope.checkQueueExists(producer)
        try producer.pause(worker: scope.worker, queue: scope.queue)
        print("paused \(scope.description)")
        try scope.checkWorkerLives(producer, after: "pause")
    }
}

/// `warren resume`: workers take jobs again.
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Let paused workers take jobs again, where they left off.")

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var scope: ScopeOptions

    func run() throws {
        let producer = try Producer(url: broker.brokerURL)
        defer { producer.close() }
        try scope.checkQueueExists(producer)
        try producer.resume(worker: scope.worker, queue: scope.queue)
        print("resumed \(scope.description)")
        try scope.checkWorkerLives(producer, after: "resume")
    }
}
