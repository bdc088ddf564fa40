#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The C library's calls whose names a type's own methods hide (`close`, `write`, `exit`), from Glibc on Linux and
/// Darwin on macOS. Named at file scope, where no method hides them.
///
/// Thread safety: stateless.
package enum SystemCall {
    /// Closes `descriptor`; returns `close(2)`'s result.
    @discardableResult
    package static func close(_ descriptor: Int32) -> Int32 {
        cClose(descriptor)
    }

    /// Writes `count` bytes from `buffer` to `descriptor`; returns `write(2)`'s result.
    package static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        cWrite(descriptor, buffer, count)
    }

    /// Ends the process with `status`.
    package static func exit(_ status: Int32) -> Never {
        cExit(status)
    }
}

private let cClose: @Sendable (Int32) -> Int32 = { close($0) }
private let cWrite: @Sendable (Int32, UnsafeRawPointer, Int) -> Int = { write($0, $1, $2) }
private func cExit(_ status: Int32) -> Never { exit(status) }
