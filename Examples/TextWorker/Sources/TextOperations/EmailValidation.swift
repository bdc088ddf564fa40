import Warren

/// The `validate-email` operation: checks that a text looks like an email address and splits it at its `@`.
///
/// It shows a user-defined failure: an input that is not an address ends the job `failed` with the error code
/// `invalidEmail`, which producers can tell apart from Warren's own codes (`invalidInput`, `handlerError`, ...).
public enum EmailValidation: OperationDefinition {
    /// The operation type name producers use.
    public static let type = "validate-email"

    /// The error code of a job whose input is not an email address.
    public static let invalidEmail = "invalidEmail"

    /// The job's input: `{"email": "..."}`.
    public struct Input: Codable, Sendable {
        public var email: String

        public init(email: String) { self.email = email }
    }

    /// The job's output: `{"local": "someone", "domain": "example.com"}`.
    public struct Output: Codable, Sendable, Equatable {
        /// The part before the `@`.
        public var local: String
        /// The part after the `@`.
        public var domain: String

        public init(local: String, domain: String) {
            self.local = local
            self.domain = domain
        }
    }

    /// Checks `input.email`: one `@`, with text before and after it.
    /// - Throws: `JobError` with code `invalidEmail` when it is not an address.
    @Sendable public static func run(_ input: Input, job: JobContext) throws -> Output {
        let parts = input.email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            let problem = parts.count < 2 ? "it has no '@'" : "it has more than one '@'"
            throw JobError(code: invalidEmail, message: "'\(input.email)' is not an email address: \(problem)")
        }
        guard !parts[0].isEmpty, !parts[1].isEmpty else {
            throw JobError(
                code: invalidEmail,
                message: "'\(input.email)' is not an email address: it needs text before and after its '@'")
        }
        return Output(local: String(parts[0]), domain: String(parts[1]))
    }
}
