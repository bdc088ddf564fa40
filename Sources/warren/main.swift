import WarrenCLI

WarrenCommand.main(root: WarrenTool.self)
