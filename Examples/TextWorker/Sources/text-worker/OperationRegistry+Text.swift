import Warren

extension OperationRegistry {
    /// The local queue `wordcount` runs on unless told otherwise.
    static let cpuLocalQueue = "cpu"

    /// Registers this package's operation types: ``WordCount`` (blocking, on `cpuQueue`), ``Shout`` (asynchronous)
    /// and ``EmailValidation`` (blocking), the last two on the default local queue.
    ///
    /// A worker running this registry needs a local queue named `cpuQueue`: `--local-queue cpu=N`.
    mutating func registerTextOperations(cpuQueue: String = cpuLocalQueue) {
        register(WordCount.type, on: cpuQueue, blocking: WordCount.run)
        register(Shout.type, asynchronous: Shout.run)
        register(EmailValidation.type, blocking: EmailValidation.run)
    }
}
