extension OperationRegistry {
    /// Registers blocking code for `definition`, replacing any earlier registration of its type.
    ///
    /// ```swift
    /// registry.register(WordCount.self, on: "cpu") { input, job in
    ///     WordCount.Output(words: input.text.split(separator: " ").count)
    /// }
    /// ```
    ///
    /// A trailing closure that awaits registers asynchronous code instead (``register(_:on:asynchronous:)-(Definition.Type,_,_)``).
    /// Spell the label to choose the form.
    /// - Parameters:
    ///   - definition: The operation type: its name, input and output.
    ///   - localQueue: The worker's local queue it runs on. Default: `default`.
    ///   - body: Runs on a thread of that queue; check `job.isCancelled` often.
    public mutating func register<Definition: OperationDefinition>(
        _ definition: Definition.Type, on localQueue: String = defaultLocalQueue,
        blocking body: @escaping @Sendable (Definition.Input, JobContext) throws -> Definition.Output
    ) {
        register(Definition.type, on: localQueue, blocking: body)
    }

    /// Registers asynchronous code for `definition`, replacing any earlier registration of its type.
    ///
    /// ```swift
    /// registry.register(Shout.self) { input, job in
    ///     try await Task.sleep(for: .milliseconds(input.delayMs))
    ///     return Shout.Output(text: input.text.uppercased())
    /// }
    /// ```
    /// - Parameters:
    ///   - definition: The operation type: its name, input and output.
    ///   - localQueue: The worker's local queue it counts against. Default: `default`.
    ///   - body: Runs in a task that is cancelled when the job is; it holds no thread while it awaits.
    public mutating func register<Definition: OperationDefinition>(
        _ definition: Definition.Type, on localQueue: String = defaultLocalQueue,
        asynchronous body: @escaping @Sendable (Definition.Input, JobContext) async throws -> Definition.Output
    ) {
        register(Definition.type, on: localQueue, asynchronous: body)
    }
}
