// The libFuzzer target for everything that decodes bytes from the wire; `scripts/fuzz` builds and runs it.
//
// Why the entry point is unusual: SwiftPM links every Linux executable with `--defsym main=WarrenFuzz_main`,
// which replaces libFuzzer's own `main`. So the fuzz build (`-sanitize=fuzzer,address -D WARREN_FUZZ`) defines
// `WarrenFuzz_main` itself and hands over to libFuzzer's driver. A normal build gets a `main` that only says how
// to fuzz, so the target costs `swift build` nothing but a few seconds.
import Foundation

#if WARREN_FUZZ
    import CLibFuzzer

    /// libFuzzer calls this with each input; every wire decoder gets it (``WireFuzzing``).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
        let bytes = count == 0 ? [] : Array(UnsafeBufferPointer(start: start, count: count))
        WireFuzzing.all(bytes)
        return 0
    }

    /// The process entry point of the fuzz build: libFuzzer's command line, corpus and options.
    @_cdecl("WarrenFuzz_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv) { start, count in fuzzOneInput(start, count) }
    }
#else
    @main enum NotFuzzing {
        static func main() {
            print("warren-fuzz only fuzzes when built by scripts/fuzz (libFuzzer); this build does nothing.")
        }
    }
#endif
