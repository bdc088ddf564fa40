import Foundation
import Testing

/// The documentation cannot drift unseen: the README stays a front door, `docs/cli.md` is what `scripts/cli-docs`
/// makes from the real `--help` of every command, and every link in the README and `docs/` reaches a file and, where
/// it names one, a heading of it. No broker needed; the built `warren` runs only `help`.
extension Integration {
    @Suite struct Documentation {
        static let root = TestEnvironment.packageRoot

        /// The pages whose links are checked: the README, the changelog and the pages of `docs/` (not the notes in
        /// `docs/cli-notes`, whose links are written for `docs/cli.md`, which includes them).
        static func pages() throws -> [URL] {
            let docs = root.appendingPathComponent("docs")
            let listed = try FileManager.default.contentsOfDirectory(at: docs, includingPropertiesForKeys: nil)
            return [root.appendingPathComponent("README.md"), root.appendingPathComponent("CHANGELOG.md")]
                + listed.filter { $0.pathExtension == "md" }.sorted { $0.path < $1.path }
        }

        @Test("the README has at most 250 lines")
        func readmeLength() throws {
            let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
            let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).count - 1
            #expect(lines <= 250, "README.md has \(lines) lines: move reference material to docs/ or to DocC")
        }

        @Test("docs/cli.md is what scripts/cli-docs makes from every command's --help")
        func commandReference() throws {
            let script = Self.root.appendingPathComponent("scripts/cli-docs")
            let run = try ChildProcess(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [script.path, "--binary", TestEnvironment.warrenBinary.path, "--stdout"])
            try #require(run.waitForExit() == 0, "\(run.stderr)")
            let committed = try String(contentsOf: Self.root.appendingPathComponent("docs/cli.md"), encoding: .utf8)
            let made = run.stdout
            let difference = zip(committed.split(separator: "\n"), made.split(separator: "\n")).first { $0 != $1 }
            let isCurrent = made == committed
            #expect(
                isCurrent,
                """
                docs/cli.md differs from what scripts/cli-docs makes: run scripts/cli-docs and commit docs/cli.md. \
                First difference: \(difference.map { "'\($0)' committed, '\($1)' made" } ?? "the length")
                """)
        }

        @Test("every link in the README and docs/ points to a file that exists, and to a heading that file has")
        func links() throws {
            var broken: [String] = []
            for page in try Self.pages() {
                let text = try String(contentsOf: page, encoding: .utf8)
                for target in Self.links(in: text) where !target.contains("://") && !target.hasPrefix("mailto:") {
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                    let path = String(parts[0])
                    let file = path.isEmpty ? page : page.deletingLastPathComponent().appendingPathComponent(path)
                    guard FileManager.default.fileExists(atPath: file.path) else {
                        broken.append("\(page.lastPathComponent): \(target): no such file")
                        continue
                    }
                    guard parts.count == 2 else { continue }
                    let anchors = Self.anchors(in: try String(contentsOf: file, encoding: .utf8))
                    if !anchors.contains(String(parts[1])) {
                        broken.append("\(page.lastPathComponent): \(target): no such heading there")
                    }
                }
            }
            #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
        }

        @Test("the link checker reads links and anchors as GitHub does")
        func linkChecker() {
            let text = """
                # Warren
                ## 3.7 Reading stored results
                ## Policies to keep off Warren's queues
                ## Long jobs and `consumer_timeout`
                ## Notes
                ## Notes
                See [one](a.md#x), `[not](b.md)` and [two](#notes-1).
                ```
                [nor](c.md)
                ```
                """
            #expect(Self.links(in: text) == ["a.md#x", "#notes-1"])
            #expect(
                Self.anchors(in: text)
                    == [
                        "warren", "37-reading-stored-results", "policies-to-keep-off-warrens-queues",
                        "long-jobs-and-consumer_timeout", "notes", "notes-1",
                    ])
        }

        /// The targets of the inline links of markdown `text`, outside code blocks and code spans.
        static func links(in text: String) -> [String] {
            prose(of: text).flatMap { line in
                line.matches(of: /\]\(([^)\s]+)\)/).map { String($0.output.1) }
            }
        }

        /// The anchors GitHub gives the headings of markdown `text`: lower case, punctuation but `-` and `_` left
        /// out, spaces as `-`, and `-1`, `-2`… after a heading's second and later uses.
        static func anchors(in text: String) -> [String] {
            var seen: [String: Int] = [:]
            return prose(of: text, keepingCode: true).compactMap { line -> String? in
                guard let heading = line.firstMatch(of: /^#{1,6}\s+(.*)$/) else { return nil }
                let slug = String(
                    heading.output.1.lowercased().unicodeScalars.filter {
                        CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "_"
                    }
                ).replacingOccurrences(of: " ", with: "-")
                defer { seen[slug, default: 0] += 1 }
                return seen[slug].map { "\(slug)-\($0)" } ?? slug
            }
        }

        /// The lines of `text` outside fenced code blocks, with code spans removed unless `keepingCode`.
        static func prose(of text: String, keepingCode: Bool = false) -> [String] {
            var inFence = false
            return text.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line -> String? in
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                    inFence.toggle()
                    return nil
                }
                if inFence { return nil }
                return keepingCode ? String(line) : String(line.replacing(/`[^`]*`/, with: ""))
            }
        }
    }
}
