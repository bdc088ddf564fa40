import Testing

extension Integration {
    @Suite struct ShellCompletion {
        @Test(
            "warren writes completion scripts for bash, zsh and fish that know its commands",
            arguments: ["bash", "zsh", "fish"])
        func scripts(shell: String) throws {
            let output = try CLI.run(["--generate-completion-script", shell])
            #expect(output.status == 0, "\(output.stderr)")
            for command in ["worker", "enqueue", "purge", "dead"] {
                #expect(output.stdout.contains(command), "\(shell): \(command)")
            }
        }
    }
}
