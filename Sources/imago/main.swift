import Foundation
import Imago
import ImagoCommandLine

// Before any image is made: see the function.
tuneAllocatorForImages()

/// Every `imago` command; each parses its own options from its table.
let commands = [decodeCommand, fetchCommand, sheetCommand, cacheCommand, hashCommand]

func usage() -> String {
    var text = "usage: imago COMMAND [OPTIONS]\n\nImago loads, caches and decodes images.\n\ncommands:\n"
    for command in commands {
        text += "  " + command.name.padding(toLength: 10, withPad: " ", startingAt: 0) + command.firstSentence + "\n"
    }
    return text + "\nRun 'imago COMMAND --help' (or 'imago help COMMAND') for a command's options; 'imago --version' for the version.\n"
}

let argv = Array(CommandLine.arguments.dropFirst())
if argv.first == "--version" {
    print("imago \(HTTPLoaderConfiguration.version)")
    exit(ExitStatus.success)
}
// `imago help fetch`, as git and swift take it: the command's own help.
if argv.first == "help", argv.count == 2 {
    guard let command = commands.first(where: { $0.name == argv[1] }) else {
        Output.error("unknown command '\(argv[1])'\n\n" + usage())
        exit(ExitStatus.usage)
    }
    await command.main(["--help"])
}
guard let name = argv.first, name != "--help", name != "-h", name != "help" else {
    if argv.isEmpty {
        FileHandle.standardError.write(Data(usage().utf8))
        exit(ExitStatus.usage)
    }
    print(usage(), terminator: "")
    exit(ExitStatus.success)
}
guard let command = commands.first(where: { $0.name == name }) else {
    Output.error("unknown command '\(name)'\n\n" + usage())
    exit(ExitStatus.usage)
}
await command.main(Array(argv.dropFirst()))
