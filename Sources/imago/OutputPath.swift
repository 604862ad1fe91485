import Foundation
import Imago
import ImagoCommandLine

/// The format a file written by `decode --out` or `sheet -o` takes, chosen by its
/// extension, once the path is known to be writable as a file: checked before any
/// image is loaded, so a sheet of a thousand URLs does not load them all to fail at
/// the end.
func outputFormat(of path: String, option: String) throws(UsageError) -> ImageFormat {
    let supported = ".png, .jpg or .webp"
    guard path != "-" else {
        throw UsageError(message: "\(option) - (standard output) is not supported: give a file name ending in \(supported)")
    }
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
        throw UsageError(message: "\(option) \(path) is a directory: give a file name ending in \(supported)")
    }
    let parent = (path as NSString).deletingLastPathComponent
    if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory) || !isDirectory.boolValue {
        throw UsageError(message: "\(option) \(path): there is no directory \(parent)")
    }
    let ext = (path as NSString).pathExtension
    guard !ext.isEmpty else {
        throw UsageError(message: "\(option) \(path) has no extension, which chooses the format: give \(supported)")
    }
    guard let format = ImageFormat(pathExtension: ext), ImageEncoders.encoder(for: format) != nil else {
        throw UsageError(message: "cannot write '.\(ext)' files (supported: \(supported))")
    }
    return format
}
