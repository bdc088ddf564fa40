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
        // `$HOME` first, as the shell's `~`: Foundation's home directory is the user database's.
        let home = environment["HOME"] ?? NSHomeDirectory()
        let state = environment["XDG_STATE_HOME"] ?? (home + "/.local/state")
        return state + "/warren"
    }

    /// The error for a file Warren keeps (`what`: "the sequence file") that the system refused to `action` (open,
    /// lock, read, write) at `path`, with `errno`'s reason; for a file in the state directory, how to choose
    /// another, or that it was chosen.
    static func failure(_ action: String, _ what: String, _ path: String) -> WarrenError {
        let reason = String(cString: strerror(errno))
        return WarrenError(.system, "cannot \(action) \(what) '\(path)': \(reason)\(hint(for: path))")
    }

    /// Creates `directory` and its missing parents, as `mkdir -p` does: `nil`, or why not, in the system's words
    /// (`Not a directory` for a parent that is a file, where Foundation says only "The operation could not be
    /// completed").
    static func create(_ directory: String) -> String? {
        var path = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o755) != 0 && errno != EEXIST { return String(cString: strerror(errno)) }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            return String(cString: strerror(ENOTDIR))
        }
        return nil
    }

    /// How the state directory holding `path` was chosen, for error messages; empty for a path outside it.
    static func hint(for path: String) -> String {
        let directory = Self.path
        guard path.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/") else { return "" }
        let chosen = ProcessInfo.processInfo.environment["WARREN_STATE_DIR"].map { !$0.isEmpty } ?? false
        return chosen
            ? " (the state directory, from WARREN_STATE_DIR)" : " (set WARREN_STATE_DIR for another state directory)"
    }
}
