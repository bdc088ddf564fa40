/// An operation type that producers and workers share: its name, its input and its output, declared once.
///
/// ```swift
/// enum Thumbnail: OperationDefinition {
///     static let type = "thumbnail"
///     struct Input: Codable, Sendable { var url: String; var size: Int }
///     struct Output: Codable, Sendable { var url: String }
/// }
///
/// // The worker:
/// registry.register(Thumbnail.self, on: "cpu") { input, job in try makeThumbnail(input, job) }
/// // The producer:
/// let job = try await producer.enqueue(Thumbnail.self, .init(url: url, size: 128))
/// let thumbnail = try await job.result().get()
/// ```
///
/// Put definitions in a module that both the worker and the producer import. The compiler then checks both ends.
/// A producer written in another language sends the same JSON: ``type`` names the operation, and `Input` encodes
/// as the descriptor's `input`.
public protocol OperationDefinition: Sendable {
    /// What a job of this type takes, as the descriptor's `input`.
    associatedtype Input: Codable & Sendable
    /// What a job of this type returns, as the result's `output`.
    associatedtype Output: Codable & Sendable

    /// The operation type name: the descriptor's `type` field.
    static var type: String { get }
}
