import WarrenCLI

WarrenCommand.main()
