/// The version of Warren this library is.
///
/// Thread safety: immutable.
public enum WarrenVersion {
    /// The release, as semantic versioning writes it: `0.1.0`.
    public static let string = "0.1.0"
}
