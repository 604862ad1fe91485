import Foundation
#if os(Linux)
import CImagoSystem

// Decoded images are megabytes each, made and freed by the hundred. By default glibc
// gives blocks that large back to the kernel at each free, and the next image pays
// its page faults again: in a fetch of 300 photos, 55,000–66,000 page faults and
// 0.2 s of system time, against 19,000 and 0.08 s with these settings, for 7 MB more
// at the peak. Blocks of up to 32 MB (the most glibc allows) come from the heap, and
// the heap keeps up to 64 MB of free space for the next ones (256 MB saved no more).
_ = mallopt(M_MMAP_THRESHOLD, 32 << 20)
_ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
#endif

/// Every `imago` command; each parses its own options from its table.
let commands = [decodeCommand, fetchCommand, sheetCommand, benchCommand, cacheCommand]

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
