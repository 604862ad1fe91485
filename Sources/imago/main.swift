import Foundation
import ImagoCommandLine

// Before any image is made: see the function.
tuneAllocatorForImages()

/// Every `imago` command; each parses its own options from its table.
let commands = [decodeCommand, fetchCommand, sheetCommand, cacheCommand]

func usage() -> String {
    var text = "usage: imago COMMAND [OPTIONS]\n\nImago loads, caches and decodes images.\n\ncommands:\n"
    for command in commands {
        text += "  " + command.name.padding(toLength: 10, withPad: " ", startingAt: 0) + command.summary.prefix { $0 != "." } + "\n"
    }
    return text + "\nRun 'imago COMMAND --help' for a command's options.\n"
}

let argv = Array(CommandLine.arguments.dropFirst())
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
let rest = Array(argv.dropFirst())
if rest.contains("--help") || rest.contains("-h") {
    print(command.help, terminator: "")
    exit(ExitStatus.success)
}
do {
    let arguments = try Arguments(rest, options: command.options)
    exit(await command.run(arguments))
} catch {
    Output.error(error.message + "\n\n" + command.help)
    exit(ExitStatus.usage)
}
