extension Array where Element: Hashable {
    /// The elements in order, each only where it first appears.
    package func uniqued() -> [Element] {
        var seen: Set<Element> = []
        return filter { seen.insert($0).inserted }
    }
}
