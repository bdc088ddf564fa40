// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "warren",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Warren", targets: ["Warren"]),
        .library(name: "AMQP", targets: ["AMQP"]),
        .library(name: "WarrenTesting", targets: ["WarrenTesting"]),
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
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // The dashboard's HTTP server. Its configuration-file support is left out: the dashboard takes options.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0", traits: ["FullFoundation"]),
        // `swift package generate-documentation --target Warren` builds the DocC catalogue.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CRabbitMQ",
            pkgConfig: "librabbitmq",
            providers: [.apt(["librabbitmq-dev"]), .brew(["rabbitmq-c"])]
        ),
        .target(name: "AMQP", dependencies: ["CRabbitMQ"]),
        .target(
            name: "Warren",
            dependencies: [
                "AMQP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Runs operations and jobs in memory, for users' unit tests: no broker.
        .target(name: "WarrenTesting", dependencies: ["Warren", .product(name: "Logging", package: "swift-log")]),
        .target(name: "WarrenBench", dependencies: ["Warren", "AMQP"]),
        .target(
            name: "WarrenCLI",
            dependencies: [
                "Warren",
                "AMQP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The web dashboard: a module of its own, so that WarrenCLI, which users' worker executables link, does not
        // pull in Hummingbird. The `warren` executable composes its command into the root command.
        .target(
            name: "WarrenDashboard",
            dependencies: [
                "Warren",
                "AMQP",
                "WarrenCLI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `warren bench`: kept out of WarrenCLI, so that a user's worker executable does not link the benchmark.
        .target(
            name: "WarrenBenchCLI",
            dependencies: [
                "WarrenCLI", "WarrenBench", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "warren",
            dependencies: [
                "WarrenCLI", "WarrenBenchCLI", "WarrenDashboard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .systemLibrary(name: "CLibFuzzer"),
        .executableTarget(name: "WarrenFuzz", dependencies: ["Warren", "AMQP", "CLibFuzzer"]),
        .testTarget(name: "AMQPTests", dependencies: ["AMQP"]),
        .testTarget(
            name: "WarrenTests",
            dependencies: ["Warren", .product(name: "MetricsTestKit", package: "swift-metrics")]
        ),
        .testTarget(
            name: "WarrenTestingTests",
            dependencies: [
                "WarrenTesting", "Warren",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "WarrenCLITests",
            dependencies: ["WarrenCLI", "AMQP", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "WarrenBenchTests", dependencies: ["WarrenBench"]),
        .testTarget(
            name: "WarrenDashboardTests",
            dependencies: ["WarrenDashboard", "Warren", .product(name: "Hummingbird", package: "hummingbird")]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Warren", "AMQP",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            // Foreign clients the tests run as processes.
            exclude: ["Clients"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
