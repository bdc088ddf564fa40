import Warren

extension OperationRegistry {
    /// The local queue `wordcount` runs on unless told otherwise.
    public static let cpuLocalQueue = "cpu"

    /// Registers this package's operation types: ``WordCount`` (blocking, on `cpuQueue`), ``Shout`` (asynchronous)
    /// and ``EmailValidation`` (blocking), the last two on the default local queue.
    ///
    /// A worker running this registry needs a local queue named `cpuQueue`.
    public mutating func registerTextOperations(cpuQueue: String = cpuLocalQueue) {
        register(WordCount.self, on: cpuQueue, blocking: WordCount.run)
        register(Shout.self, asynchronous: Shout.run)
        register(EmailValidation.self, blocking: EmailValidation.run)
    }
}
