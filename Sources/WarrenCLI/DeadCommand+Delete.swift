import ArgumentParser
import Foundation
import Warren

extension DeadCommand {
    /// `warren dead delete ID...|--all --yes`: deletes dead letters for good.
    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete dead letters for good: every letter of the given job ids, or all.",
            discussion: """
                Without --yes, says how many letters it would delete and exits 64. Exits 1 when an id has no dead \
                letter; the letters of the others are deleted all the same.
                Examples:
                  warren dead delete 3f0c… 7a1e… --yes
                  warren dead delete --all --yes
                """)

        @OptionGroup var broker: BrokerOptions

        @Argument(help: "Job ids whose letters to delete.")
        var ids: [String] = []

        @Flag(name: .long, help: "Delete every dead letter.")
        var all = false

        @Flag(name: .long, help: "Delete: without it, nothing is deleted.")
        var yes = false

        func validate() throws {
            if ids.isEmpty == !all { throw ValidationError("name job ids, or --all (not both)") }
        }

        func run() throws {
            let dead = try DeadLetterQueue(url: broker.brokerURL)
            defer { dead.close() }
            guard yes else {
                let count =
                    all
                    ? try dead.count()
                    : try dead.list(limit: 100_000).filter { $0.jobID.map(Set(ids).contains) ?? false }.count
                throw ValidationError("this would delete \(count) dead letter(s); add --yes to delete them")
            }
            if all {
                print("deleted \(try dead.deleteAll()) dead letter(s)")
                return
            }
            let deleted = try dead.delete(jobIDs: Set(ids))
            for letter in deleted {
                print("deleted \(DeadCommand.line(letter))")
            }
            fflush(nil)  // in the order things happened, also where both streams go to one file
            let found = Set(deleted.compactMap(\.jobID))
            let missing = ids.filter { !found.contains($0) }
            for id in missing {
                StandardErrorLines.write("warren: no dead letter for job \(ResultPrinter.printable(id))\n")
            }
            if !missing.isEmpty { throw ExitCode.failure }
        }
    }
}
