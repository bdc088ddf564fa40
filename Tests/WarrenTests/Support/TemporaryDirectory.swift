import Foundation

/// A fresh directory under the system's temporary directory, removed when the value is released.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "warren-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
