#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library's calls whose names a type's own methods hide (`close`, `write`, `exit`), from Glibc on Linux and
/// Darwin on macOS.
///
/// Thread safety: stateless.
package enum SystemCall {
    /// Closes `descriptor`; returns `close(2)`'s result.
    @discardableResult
    package static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Glibc)
        SystemCall.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }

    /// Writes `count` bytes from `buffer` to `descriptor`; returns `write(2)`'s result.
    package static func write(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        SystemCall.write(descriptor, buffer, count)
        #else
        Darwin.write(descriptor, buffer, count)
        #endif
    }

    /// Ends the process with `status`.
    package static func exit(_ status: Int32) -> Never {
        #if canImport(Glibc)
        SystemCall.exit(status)
        #else
        Darwin.exit(status)
        #endif
    }
}
