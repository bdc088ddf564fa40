/// The two sides.
public enum SideKind: String, Sendable, Codable, CaseIterable {
    case baseline, warren
}
