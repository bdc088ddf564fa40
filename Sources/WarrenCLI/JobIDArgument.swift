import ArgumentParser
import Warren

/// Job ids given on the command line (`warren cancel`, `warren results --job`): a string that cannot be a job id
/// (``OperationDescriptor/problem(withID:)``) is a bad argument, which would otherwise match nothing, silently.
enum JobIDArgument {
    static func validate(_ ids: some Sequence<String>) throws {
        if let problem = ids.lazy.compactMap(OperationDescriptor.problem(withID:)).first {
            throw ValidationError(ResultPrinter.printable(problem))
        }
    }
}
