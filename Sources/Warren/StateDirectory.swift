import Foundation

/// Where Warren keeps what must outlive a process on a host: the producer's sequence file, the workers' crash
/// journals.
///
/// Thread safety: immutable (a namespace).
enum StateDirectory {
    /// `$WARREN_STATE_DIR`, else `$XDG_STATE_HOME/warren`, else `~/.local/state/warren`.
    static var path: String {
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        if let directory = environment["WARREN_STATE_DIR"] { return directory }
        let state = environment["XDG_STATE_HOME"] ?? (NSHomeDirectory() + "/.local/state")
        return state + "/warren"
    }
}
