#if canImport(CCurl)
import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A libcurl easy handle and what must live as long as its transfer: the buffer
/// libcurl writes its error message into and the list of request headers.
///
/// Handles are reused from one transfer to the next (`curl_easy_reset` keeps the
/// connection and DNS caches they share through the multi handle), so a load costs
/// no allocation of libcurl state once the loader has warmed up.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: UnsafeMutablePointer<curl_slist>?

    init?() {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    /// libcurl's message for the last failure, or "" when it wrote none.
    var errorMessage: String {
        String(cString: errorBuffer).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sets every option of `transfer`'s current hop, from a clean handle; its
    /// sockets are opened and closed through `sockets`.
    func configure(for transfer: CurlTransfer, settings: HTTPLoaderConfiguration, sockets: CurlSockets) {
        curl_easy_reset(handle)
        curl_slist_free_all(headerList)
        headerList = nil
        errorBuffer[0] = 0
        transfer.sockets = sockets
        transfer.descriptorsRefused = false
        let context = UnsafeMutableRawPointer(Unmanaged.passUnretained(transfer).toOpaque())
        setString(CURLOPT_URL, transfer.url.absoluteString)
        // Only HTTP, whatever the URL or a redirect says; redirects are followed by
        // the transfer itself, hop by hop, through the redirect policy.
        setString(CURLOPT_PROTOCOLS_STR, "http,https")
        setLong(CURLOPT_FOLLOWLOCATION, 0)
        // No signals from libcurl on a thread it does not own.
        setLong(CURLOPT_NOSIGNAL, 1)
        setLong(CURLOPT_SSL_VERIFYPEER, 1)
        setLong(CURLOPT_SSL_VERIFYHOST, 2)
        // Every encoding libcurl can decode (gzip, deflate, …), decoded as it arrives.
        setString(CURLOPT_ACCEPT_ENCODING, "")
        // Idle timers only: a connection that cannot be made, or a transfer that
        // receives nothing for this long, fails. The whole load's deadline is the
        // image loader's, which cancels.
        let idle = settings.idleSeconds
        setLong(CURLOPT_CONNECTTIMEOUT, idle)
        setLong(CURLOPT_LOW_SPEED_LIMIT, 1)
        setLong(CURLOPT_LOW_SPEED_TIME, idle)
        // Fewer, larger callbacks for image-sized bodies than the 16 KB default.
        setLong(CURLOPT_BUFFERSIZE, 64 << 10)
        _ = imago_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = imago_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, curlWriteBody)
        _ = imago_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = imago_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        _ = imago_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = imago_easy_setopt_opensocket_callback(handle, curlOpenSocket)
        _ = imago_easy_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, context)
        _ = imago_easy_setopt_closesocket_callback(handle, curlCloseSocket)
        _ = imago_easy_setopt_pointer(handle, CURLOPT_CLOSESOCKETDATA, Unmanaged.passUnretained(sockets).toOpaque())

        switch transfer.method {
        case "GET": break
        case "HEAD": setLong(CURLOPT_NOBODY, 1)
        default: setString(CURLOPT_CUSTOMREQUEST, transfer.method)
        }
        if let body = transfer.body {
            _ = imago_easy_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            body.withUnsafeBytes { _ = imago_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        }
        for (name, value) in transfer.headers {
            // "Name;" is libcurl's way of sending a field with an empty value.
            let line = value.isEmpty ? "\(name);" : "\(name): \(value)"
            headerList = curl_slist_append(headerList, line)
        }
        if let headerList { _ = imago_easy_setopt_pointer(handle, CURLOPT_HTTPHEADER, headerList) }
    }

    private func setLong(_ option: CURLoption, _ value: Int) {
        _ = imago_easy_setopt_long(handle, option, value)
    }

    private func setString(_ option: CURLoption, _ value: String) {
        // libcurl copies string options.
        _ = value.withCString { imago_easy_setopt_pointer(handle, option, $0) }
    }

    /// A long-valued fact about the finished transfer.
    func info(_ info: CURLINFO) -> Int {
        var value = 0
        _ = imago_easy_getinfo_long(handle, info, &value)
        return value
    }
}

/// libcurl's body callback: the context is the transfer, unretained (the driver
/// holds it while its handle is in the multi). Returning less than was given stops
/// the transfer.
private let curlWriteBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    pointer, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count)) ? size * count : 0
}

/// libcurl's header callback: one whole header line at a time.
private let curlWriteHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    pointer, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveHeader(UnsafeRawBufferPointer(start: pointer, count: size * count)) ? size * count : 0
}

/// The thread that runs every transfer of one curl loader through one libcurl multi
/// handle: it adds new transfers and removes cancelled ones, lets libcurl move
/// bytes (`curl_multi_perform`), ends finished transfers, and sleeps in
/// `curl_multi_poll` until a socket is ready, a timer is due, or another thread
/// hands it work and wakes it (`curl_multi_wakeup`, the only multi call made off
/// this thread).
///
/// libcurl does the connection work: connections are kept per origin and reused
/// (`CURLMOPT_MAXCONNECTS`), at most `connectionLimit` are open at once and at most
/// the configured number per host; transfers beyond either limit wait inside
/// libcurl until a connection frees up, instead of failing.
final class CurlDriver: @unchecked Sendable {
    // `@unchecked`: the multi handle and the tables below are used only by the
    // driver thread, except `curl_multi_wakeup`, which libcurl allows from any
    // thread and which is called under the inbox lock so it never races the cleanup.

    private let multi: UnsafeMutableRawPointer
    private let settings: HTTPLoaderConfiguration
    /// Connections open at once at most; lowered when the process runs short of
    /// descriptors (driver thread only, after `init`).
    private var connectionLimit: Int

    private struct Inbox {
        var starts: [CurlTransfer] = []
        var stops: [CurlTransfer] = []
        var closing = false
        var closed = false
        /// Transfers handed over and not yet let go of by the driver.
        var unfinished = 0
    }

    private let inbox = Locked(Inbox())

    // Driver thread only.
    private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private var spare: [CurlEasy] = []
    private let sockets = CurlSockets()

    private static let globalInit: Void = {
        _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    init(settings: HTTPLoaderConfiguration, connectionLimit: Int) {
        _ = Self.globalInit
        self.settings = settings
        self.connectionLimit = connectionLimit
        multi = curl_multi_init()
        // Idle connections are kept up to the whole budget, so that loads spread over
        // many origins still find theirs open; libcurl closes the oldest idle one
        // when it needs the room.
        _ = imago_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, connectionLimit)
        setConnectionLimit(connectionLimit)
        let thread = Thread { [self] in run() }
        thread.name = "Imago.CurlDataLoader"
        thread.qualityOfService = .userInitiated
        thread.start()
    }

    /// Hands `transfer` to the driver thread.
    func start(_ transfer: CurlTransfer) {
        let accepted = send { $0.starts.append(transfer); $0.unfinished += 1 }
        if !accepted { transfer.finish(.failure(.cancelled)) }
    }

    /// Asks the driver thread to drop `transfer` (already finished as cancelled) and
    /// close its connection.
    func stop(_ transfer: CurlTransfer) {
        send { $0.stops.append(transfer) }
    }

    /// Ends the thread; transfers still running end as cancelled.
    func shutdown() {
        send { $0.closing = true }
    }

    var unfinishedCount: Int { inbox.withLock { $0.unfinished } }

    /// Applies `change` and wakes the thread; false once the thread has ended.
    ///
    /// Only the first change since the thread last emptied the inbox wakes it: that
    /// wakeup is still pending (or the thread is still to come to the inbox) when the
    /// others arrive, and the thread takes them all at once. Each wakeup is a write to
    /// a socket and another round of the thread's loop.
    @discardableResult
    private func send(_ change: (inout Inbox) -> Void) -> Bool {
        inbox.withLock { inbox in
            guard !inbox.closed else { return false }
            let woken = !inbox.starts.isEmpty || !inbox.stops.isEmpty || inbox.closing
            change(&inbox)
            if !woken { _ = curl_multi_wakeup(multi) }
            return true
        }
    }

    // MARK: The driver thread

    private func run() {
        while true {
            let (starts, stops, closing) = inbox.withLock { inbox in
                defer { inbox.starts = []; inbox.stops = [] }
                return (inbox.starts, inbox.stops, inbox.closing)
            }
            for transfer in stops { remove(transfer) }
            if closing { break }
            for transfer in starts { add(transfer) }
            var active: Int32 = 0
            _ = curl_multi_perform(multi, &active)
            collectFinished()
            // Returns at once when a transfer was just added (libcurl sets it a timer
            // of zero), else when a socket or timer is due or a wakeup arrives.
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for transfer in Array(running.values) {
            transfer.finish(.failure(.cancelled))
            remove(transfer)
        }
        spare.removeAll()
        inbox.withLock { inbox in
            inbox.closed = true
            inbox.unfinished -= inbox.starts.count
            for transfer in inbox.starts { transfer.finish(.failure(.cancelled)) }
            inbox.starts = []
        }
        curl_multi_cleanup(multi)
    }

    private func add(_ transfer: CurlTransfer) {
        guard !transfer.isFinished, let easy = spare.popLast() ?? CurlEasy() else {
            transfer.finish(.failure(.cancelled))
            release()
            return
        }
        easy.configure(for: transfer, settings: settings, sockets: sockets)
        transfer.easy = easy
        running[easy.handle] = transfer
        enter(transfer, easy)
    }

    /// Puts a configured handle into the multi handle; a refusal (which libcurl
    /// gives only for misuse or lack of memory) ends the transfer rather than
    /// leaving its caller waiting.
    private func enter(_ transfer: CurlTransfer, _ easy: CurlEasy) {
        let code = curl_multi_add_handle(multi, easy.handle)
        guard code != CURLM_OK else { return }
        running[easy.handle] = nil
        transfer.finish(.failure(.network(
            url: transfer.url.absoluteString,
            reason: "the transfer could not be started: \(String(cString: curl_multi_strerror(code)))",
            code: .unknown, errno: nil)))
        recycle(easy, of: transfer)
    }

    /// Takes a cancelled transfer out of the multi handle. libcurl closes the
    /// connection of a transfer removed before its end: the server sees the client
    /// go, and the connection cannot be reused in an unknown state.
    private func remove(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy, running.removeValue(forKey: easy.handle) != nil else { return }
        _ = curl_multi_remove_handle(multi, easy.handle)
        recycle(easy, of: transfer)
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                  let transfer = running[handle], let easy = transfer.easy else { continue }
            let code = message.pointee.data.result
            _ = curl_multi_remove_handle(multi, handle)
            if code != CURLE_OK, transfer.descriptorsRefused, !transfer.isFinished {
                waitForDescriptors(transfer, easy)
                continue
            }
            let socketError = Int32(truncatingIfNeeded: easy.info(CURLINFO_OS_ERRNO))
            let next = transfer.complete(
                code, message: easy.errorMessage, errno: socketError == 0 ? nil : socketError,
                responseCode: easy.info(CURLINFO_RESPONSE_CODE))
            switch next {
            case .redirect:
                easy.configure(for: transfer, settings: settings, sockets: sockets)
                enter(transfer, easy)
            case .done:
                running[handle] = nil
                recycle(easy, of: transfer)
            }
        }
    }

    /// A transfer whose socket was refused for want of descriptors waits for a
    /// connection this loader already holds: the limit comes down to the sockets
    /// open, so libcurl queues the transfer until one is free (closing an idle one
    /// to another origin if need be). Holding none, there is nothing to wait for, and
    /// the load fails with "too many open files", which is not retried.
    private func waitForDescriptors(_ transfer: CurlTransfer, _ easy: CurlEasy) {
        guard sockets.held > 0 else {
            running[easy.handle] = nil
            transfer.finish(.failure(CurlDataLoader.outOfDescriptors(url: transfer.url)))
            recycle(easy, of: transfer)
            return
        }
        if sockets.held < connectionLimit { setConnectionLimit(sockets.held) }
        easy.configure(for: transfer, settings: settings, sockets: sockets)
        enter(transfer, easy)
    }

    private func setConnectionLimit(_ limit: Int) {
        connectionLimit = limit
        _ = imago_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limit)
        _ = imago_multi_setopt_long(
            multi, CURLMOPT_MAX_HOST_CONNECTIONS, min(limit, max(1, settings.httpMaximumConnectionsPerHost)))
    }

    private func recycle(_ easy: CurlEasy, of transfer: CurlTransfer) {
        transfer.easy = nil
        // A handle pointing at no transfer: no callback can reach a freed one.
        _ = imago_easy_setopt_pointer(easy.handle, CURLOPT_WRITEDATA, nil)
        _ = imago_easy_setopt_pointer(easy.handle, CURLOPT_HEADERDATA, nil)
        _ = imago_easy_setopt_pointer(easy.handle, CURLOPT_OPENSOCKETDATA, nil)
        if spare.count < 64 { spare.append(easy) }
        release()
    }

    private func release() {
        inbox.withLock { $0.unfinished -= 1 }
    }
}
#endif
