import ArgumentParser
import Dispatch
import Synchronization
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGINT, SIGTERM and SIGHUP while `warren enqueue` publishes: the first tells the producer to publish no more
/// jobs (``Producer/Interruption``), so that the command names the jobs enqueued before it ends; a second one ends
/// the process at once, as if nothing caught them. A signal the process was started ignoring (`nohup`, a shell's
/// background job) stays ignored.
///
/// Thread safety: confined to the thread that creates it; the signal that came is atomic, written on a dispatch
/// queue.
final class InterruptSignals {
    private let first = FirstSignal()
    private var sources: [any DispatchSourceSignal] = []

    /// The signals caught: SIGINT, SIGTERM and SIGHUP, but those the process was started ignoring.
    private let caught: [Int32]

    init(interrupting interruption: Producer.Interruption) {
        let first = first
        // The signals that stop a worker gracefully stop a producer's sending.
        caught = ProcessRecycling.stopSignals.filter { number in
            var inherited = sigaction()
            return sigaction(number, nil, &inherited) == 0 && !Self.isIgnored(inherited)
        }
        let caught = caught
        sources = caught.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                guard first.record(number) else { return }
                for number in caught { signal(number, SIG_DFL) }
                interruption.interrupt()
                StandardErrorLines.write(
                    "warren: interrupted: sending no more jobs, waiting for the broker's answers to those sent "
                        + "(again to quit at once)\n")
            }
            source.resume()
            return source
        }
    }

    /// The first of the signals that came, if one did.
    var received: Int32? {
        first.number
    }

    /// The exit status of a command that ends for `received`: 128 plus its number, as a shell reports it.
    var exitCode: ExitCode {
        ExitCode(128 + (received ?? SIGINT))
    }

    /// Stops catching them: from here on they end the process.
    func restore() {
        sources.forEach { $0.cancel() }
        sources = []
        for number in caught { signal(number, SIG_DFL) }
    }

    /// Whether `action` is `SIG_IGN` (function pointers do not compare in Swift: their addresses do).
    private static func isIgnored(_ action: sigaction) -> Bool {
        unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}

/// The first signal an ``InterruptSignals`` caught.
///
/// Thread safety: atomic.
private final class FirstSignal: Sendable {
    private let stored = Atomic<Int32>(0)

    /// Keeps `number` if it is the first; whether it was.
    func record(_ number: Int32) -> Bool {
        stored.compareExchange(expected: 0, desired: number, ordering: .relaxed).exchanged
    }

    var number: Int32? {
        let number = stored.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }
}
