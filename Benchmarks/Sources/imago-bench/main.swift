import Foundation
import ImagoCommandLine

// The allocator as `imago` sets it, so that the memory figures are the tool's.
tuneAllocatorForImages()

let argv = Array(CommandLine.arguments.dropFirst())
if argv.contains("--help") || argv.contains("-h") {
    print(benchCommand.help, terminator: "")
    exit(ExitStatus.success)
}
do {
    let arguments = try Arguments(argv, options: benchCommand.options)
    exit(await benchCommand.run(arguments))
} catch {
    Output.error(error.message + "\n\n" + benchCommand.help)
    exit(ExitStatus.usage)
}
