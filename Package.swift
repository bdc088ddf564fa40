// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "warren",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Warren", targets: ["Warren"]),
        .library(name: "AMQP", targets: ["AMQP"]),
        .library(name: "WarrenCLI", targets: ["WarrenCLI"]),
        .library(name: "WarrenBench", targets: ["WarrenBench"]),
        .executable(name: "warren", targets: ["warren"]),
        // The libFuzzer target; scripts/fuzz builds it with -sanitize=fuzzer. Built normally, it does nothing.
        .executable(name: "warren-fuzz", targets: ["WarrenFuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        // `swift package generate-documentation --target Warren` builds the DocC catalogue.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"])]
        ),
        .target(name: "AMQP", dependencies: ["CRabbitMQ"]),
        .target(
            name: "Warren",
            dependencies: [
                "AMQP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(name: "WarrenBench", dependencies: ["Warren", "AMQP"]),
        .target(
            name: "WarrenCLI",
            dependencies: [
                "Warren",
                "WarrenBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "warren", dependencies: ["WarrenCLI"]),
        .systemLibrary(name: "CLibFuzzer"),
        .executableTarget(name: "WarrenFuzz", dependencies: ["Warren", "AMQP", "CLibFuzzer"]),
        .testTarget(name: "AMQPTests", dependencies: ["AMQP"]),
        .testTarget(
            name: "WarrenTests",
            dependencies: ["Warren", .product(name: "MetricsTestKit", package: "swift-metrics")]
        ),
        .testTarget(
            name: "WarrenCLITests",
            dependencies: ["WarrenCLI", "AMQP", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["Warren", "AMQP"],
            // Foreign clients the tests run as processes.
            exclude: ["Clients"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
