// swift-tools-version: 6.1
import PackageDescription

// A user's own worker package. TextOperations defines three operation types once, for the worker and its producers;
// text-worker runs them under a ServiceGroup; text-web serves HTTP, enqueues jobs, and runs a worker and a scheduler
// in the same ServiceGroup. The tests use WarrenTesting: no broker.
let package = Package(
    name: "TextWorker",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "warren", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
    ],
    targets: [
        .target(name: "TextOperations", dependencies: [.product(name: "Warren", package: "warren")]),
        .executableTarget(
            name: "text-worker",
            dependencies: [
                "TextOperations",
                .product(name: "Warren", package: "warren"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "text-web",
            dependencies: [
                "TextOperations",
                .product(name: "Warren", package: "warren"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "TextOperationsTests",
            dependencies: [
                "TextOperations",
                .product(name: "Warren", package: "warren"),
                .product(name: "WarrenTesting", package: "warren"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
