import Foundation
import ImagoCommandLine

// The allocator as `imago` sets it, so that the memory figures are the tool's.
tuneAllocatorForImages()

await benchCommand.main(Array(CommandLine.arguments.dropFirst()))
