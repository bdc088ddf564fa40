/// The sides a run measures.
public enum SideKind: String, Sendable, Codable, CaseIterable {
    /// The plain raw client: the limit of the wire pattern itself.
    case baseline
    /// The design's floor: the raw client with Warren's hop to an operation queue and its results stream
    /// (``BaselineVariant/operationQueue`` and ``BaselineVariant/resultsStream``).
    case floor
    /// Warren's own worker and producer.
    case warren
}
