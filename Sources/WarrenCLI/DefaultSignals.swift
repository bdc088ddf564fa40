#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Puts SIGINT and SIGTERM back to their default action, unblocked, on the calling thread.
///
/// A process inherits blocked and ignored signals from whatever started it (a test runner blocks nearly all of
/// them), and passes them on to its children. `warren bench` stops its workers with SIGTERM and calls this first,
/// on its main thread, so that it and the workers it starts stop when told to.
package enum DefaultSignals {
    package static func restore() {
        var set = sigset_t()
        sigemptyset(&set)
        for number in [SIGINT, SIGTERM] {
            sigaddset(&set, number)
            signal(number, SIG_DFL)
        }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}
