#if canImport(CCurl)
import CCurl
import Foundation

/// The sockets of one curl loader, opened and closed by the loader itself (libcurl's
/// open- and close-socket callbacks), so that it never takes the process's last file
/// descriptors.
///
/// A process out of descriptors does not only fail its next connection: libdispatch
/// opens `/proc/<tid>/stat` to watch its worker threads and stops the process
/// (SIGILL) when it cannot, and the disk tier's files and Foundation need some too.
/// The connection budget sized from `RLIMIT_NOFILE` is fixed when the loader is
/// made and cannot see what the rest of the process opens later, so each socket is
/// checked as it is opened: it is given back at once unless `reserve` more
/// descriptors could still be opened after it. Its transfer's connection then fails
/// as refused for want of descriptors, and the driver makes it wait for a connection
/// it already holds, or, holding none, fails the load with "too many open files".
///
/// Driver thread only: libcurl calls both callbacks from `curl_multi_perform` and
/// `curl_multi_cleanup`, which only the driver thread calls.
final class CurlSockets {
    /// Descriptors left free after each new socket: one for libdispatch's look at a
    /// thread, the others for a disk-cache file or a pipe opened meanwhile.
    static let reserve = 3

    /// Sockets open now, in connections used or idle.
    private(set) var held = 0

    /// A new socket, or nil with `errno` set: `EMFILE` when it would leave fewer than
    /// `reserve` descriptors free, or, for the loader's only socket, fewer than one
    /// (libdispatch's): a process with few descriptors then loads through one
    /// connection, slowly, rather than failing every load while a few are free.
    func openSocket(family: Int32, type: Int32, protocol: Int32) -> Int32? {
        let descriptor = socket(family, type, `protocol`)
        guard descriptor >= 0 else { return nil }
        guard Self.canOpen(held == 0 ? 1 : Self.reserve) else {
            close(descriptor)
            errno = EMFILE
            return nil
        }
        held += 1
        return descriptor
    }

    func closeSocket(_ socket: Int32) {
        close(socket)
        held -= 1
    }

    /// Whether `count` more descriptors can be opened now, found by opening
    /// `/dev/null` that many times and closing it again: a few system calls, and
    /// right whatever else the process holds.
    static func canOpen(_ count: Int) -> Bool {
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: count) { probes in
            var made = 0
            defer { for index in 0..<made { close(probes[index]) } }
            while made < count {
                let probe = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard probe >= 0 else { return false }
                probes[made] = probe
                made += 1
            }
            return true
        }
    }
}

/// libcurl's open-socket callback: the context is the transfer, unretained (the
/// driver holds it while its handle is in the multi).
let curlOpenSocket: @convention(c) (UnsafeMutableRawPointer?, curlsocktype, UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t = {
    context, _, address in
    guard let context, let address else { return -1 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    guard let sockets = transfer.sockets else { return -1 }
    if let socket = sockets.openSocket(
        family: address.pointee.family, type: address.pointee.socktype, protocol: address.pointee.protocol) {
        return socket
    }
    if errno == EMFILE || errno == ENFILE { transfer.descriptorsRefused = true }
    return -1
}

/// libcurl's close-socket callback: the context is the loader's `CurlSockets`,
/// unretained; the driver keeps it until after the multi handle's cleanup, which
/// closes the last connections.
let curlCloseSocket: @convention(c) (UnsafeMutableRawPointer?, curl_socket_t) -> Int32 = { context, socket in
    guard let context else { return close(socket) }
    Unmanaged<CurlSockets>.fromOpaque(context).takeUnretainedValue().closeSocket(socket)
    return 0
}
#endif
