import ArgumentParser
// `stdout`, a global variable of C, is read on the main thread only.
@preconcurrency import Glibc

/// Standard input, output and error, as a command-line tool has to treat them: a descriptor closed at start, a
/// write that fails (a full disk), a reader that went away, an argument that is not UTF-8.
///
/// Thread safety: called from the main thread, before a command runs or as it prints.
enum StandardStreams {
    /// Opens `/dev/null` on whichever of descriptors 0, 1 and 2 is closed, before anything else opens a file or a
    /// socket: the first socket would take the closed one's number, and output meant for the terminal would go into
    /// the broker's connection. Output descriptors are opened for reading only, so that writing to them still fails,
    /// as writing to a closed one does: output lost is reported (``checkOutput(lost:lines:)``), not taken for written.
    static func reserveDescriptors() {
        for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(descriptor, F_GETFD) == -1 {
            let opened = open("/dev/null", descriptor == STDIN_FILENO ? O_WRONLY : O_RDONLY)
            guard opened >= 0, opened != descriptor else { continue }
            dup2(opened, descriptor)
            close(opened)
        }
    }

    /// Why an argument is refused, if one is not UTF-8: Swift's `CommandLine.arguments` would replace its bytes
    /// with U+FFFD, and a queue, key or input would be other than the one given.
    static func argumentProblem() -> String? {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index], String(validatingCString: argument) == nil else {
                continue
            }
            // Shown repaired, as it would have been taken.
            return "argument \(index) is not valid UTF-8: \(ResultPrinter.printable(String(cString: argument)))"
        }
        return nil
    }

    /// Flushes standard output; why a write to it failed, if one did.
    static func outputProblem() -> String? {
        let output = stdout
        errno = 0
        let flushed = fflush(output) == 0
        guard !flushed || ferror(output) != 0 else { return nil }
        return flushed || errno == 0 ? "a write failed" : String(cString: strerror(errno))
    }

    /// Flushes standard output; when a write to it failed, says so on standard error, with what was lost, and
    /// fails: output that was lost is no success.
    /// - Parameters:
    ///   - lost: What the output held, for the message; by default, "the output".
    ///   - lines: Lines that must not be lost (the ids of jobs enqueued), written to standard error instead.
    /// - Throws: `ExitCode.failure`.
    static func checkOutput(lost: String = "the output", lines: [String] = []) throws {
        guard let problem = outputProblem() else { return }
        let instead = lines.isEmpty ? "" : "; here, instead:\n" + lines.joined(separator: "\n")
        StandardErrorLines.write("warren: cannot write \(lost) to standard output (\(problem))\(instead)\n")
        throw ExitCode.failure
    }

    /// Makes a write to a pipe whose reader went away fail with `EPIPE` rather than end the process: for a worker
    /// or scheduler whose log goes through a pipe (`2>&1 | cat` in a session that closes), which must stop as it
    /// always does, its jobs requeued, not die by `SIGPIPE` as if it crashed. It logs on; the lines are lost.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
