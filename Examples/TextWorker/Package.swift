// swift-tools-version: 6.1
import PackageDescription

// A user's own worker: Warren's built-in operation types plus the text operations in Sources/text-worker.
let package = Package(
    name: "TextWorker",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "warren", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .executableTarget(
            name: "text-worker",
            dependencies: [
                .product(name: "Warren", package: "warren"),
                .product(name: "WarrenCLI", package: "warren"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
