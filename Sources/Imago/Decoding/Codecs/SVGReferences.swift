/// How many elements an SVG document draws once its `<use>` references are followed,
/// counted from a scan of its tags before librsvg sees it.
///
/// librsvg cannot be stopped in the middle of a drawing, and a small document of
/// nested `<use>` elements (each group using the one before ten times) makes it walk
/// its limit of 500,000 referenced elements before refusing: 10 to 20 seconds of a
/// core here for a 1.5 KB file. The scan finds such a document in a fraction of a
/// millisecond and it is refused at once.
///
/// The scan reads tags only: comments, CDATA, processing instructions and the doctype
/// are skipped, and markup inside entities is not seen (libxml2 bounds what entities
/// expand to). It is an estimate for refusing, not a parser: librsvg still decides
/// whether the document is well formed.
enum SVGReferences {
    /// The most elements `<use>` references may add to a drawing, as counted here:
    /// an upper estimate, taking what `<defs>` holds and each group and `<use>` on
    /// the way as drawn too (ten thousand rectangles reached through four levels of
    /// groups count 47,000), so librsvg walks at most about a fifth of its own limit
    /// (a second or two here). Real documents (icon sheets, maps, charts) reuse
    /// symbols a few thousand times.
    static let limit = 100_000

    /// The elements the references add to the drawing, counted to a little past
    /// `limit` and no further; 0 for a document without `<use>`.
    static func referencedElements(in bytes: UnsafeBufferPointer<UInt8>, limit: Int = SVGReferences.limit) -> Int {
        elementCounts(in: bytes, limit: limit).referenced
    }

    /// From one scan: the document's own elements (what librsvg's tree holds), and
    /// the elements its references add to the drawing, as `referencedElements` counts them.
    static func elementCounts(in bytes: UnsafeBufferPointer<UInt8>, limit: Int = SVGReferences.limit) -> (elements: Int, referenced: Int) {
        var scan = Scan(bytes)
        scan.run()
        guard !scan.targets.isEmpty else { return (scan.children.count, 0) }
        // Each element draws itself, its children and, for a `<use>`, what it refers
        // to: counted once per element, in order of need, with a cap (past the limit
        // once the document's own elements are taken off) so that counts that
        // multiply cannot overflow.
        let cap = limit + 1 + scan.children.count
        var counts = [Int](repeating: -1, count: scan.children.count)
        var visiting = [Bool](repeating: false, count: scan.children.count)
        func count(_ root: Int) -> Int {
            // An explicit stack: documents nest deeper than a thread's stack allows.
            var stack: [(node: Int, next: Int)] = [(root, 0)]
            visiting[root] = true
            var total = [1]
            while let top = stack.last {
                let node = top.node
                let edges = scan.children[node] + (scan.targets[node].flatMap { scan.ids[$0] }.map { [$0] } ?? [])
                if top.next < edges.count {
                    stack[stack.count - 1].next += 1
                    let child = edges[top.next]
                    if counts[child] >= 0 {
                        total[total.count - 1] = min(cap, total[total.count - 1] + counts[child])
                    } else if !visiting[child] {
                        // A reference cycle adds nothing: librsvg refuses it at once.
                        visiting[child] = true
                        stack.append((child, 0))
                        total.append(1)
                    }
                } else {
                    stack.removeLast()
                    visiting[node] = false
                    let value = total.removeLast()
                    counts[node] = value
                    if !total.isEmpty { total[total.count - 1] = min(cap, total[total.count - 1] + value) }
                }
            }
            return counts[root]
        }
        var drawn = 0
        for root in scan.roots { drawn = min(cap, drawn + count(root)) }
        return (scan.children.count, max(0, drawn - scan.children.count))
    }

    /// The tags of a document: each element's children, its `id`, and a `<use>`'s target.
    private struct Scan {
        let bytes: UnsafeBufferPointer<UInt8>
        var children: [[Int]] = []
        var targets: [Int: String] = [:]
        var ids: [String: Int] = [:]
        var roots: [Int] = []
        private var open: [Int] = []
        private var index = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func run() {
            while let start = find(UInt8(ascii: "<"), from: index) {
                index = start + 1
                if starts("!--") { index = end(of: "-->") } else if starts("![CDATA[") { index = end(of: "]]>") } else if starts("?") {
                    index = end(of: "?>")
                } else if starts("!") {
                    skipDeclaration()
                } else if starts("/") {
                    _ = open.popLast()
                    index = end(of: ">")
                } else {
                    element()
                }
            }
        }

        /// An opening tag: its name, its attributes up to the `>` (quoted values may
        /// hold one), and whether it closes itself.
        private mutating func element() {
            let nameStart = index
            while index < bytes.count, !isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">"), bytes[index] != UInt8(ascii: "/") {
                index += 1
            }
            let name = bytes[nameStart..<index]
            var attributes: [(Range<Int>, Range<Int>)] = []
            var selfClosing = false
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ">") { index += 1; break }
                if byte == UInt8(ascii: "/") { selfClosing = true; index += 1; continue }
                if isSpace(byte) { index += 1; continue }
                selfClosing = false
                let keyStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ">"), !isSpace(bytes[index]) { index += 1 }
                let key = keyStart..<index
                while index < bytes.count, isSpace(bytes[index]) { index += 1 }
                guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }
                index += 1
                while index < bytes.count, isSpace(bytes[index]) { index += 1 }
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else { continue }
                let quote = bytes[index]
                let valueStart = index + 1
                let valueEnd = find(quote, from: valueStart) ?? bytes.count
                attributes.append((key, valueStart..<valueEnd))
                index = min(bytes.count, valueEnd + 1)
            }
            let node = children.count
            children.append([])
            if let parent = open.last { children[parent].append(node) } else { roots.append(node) }
            let isUse = name.elementsEqual("use".utf8) || name.reversed().starts(with: ":use".utf8.reversed())
            for (key, value) in attributes {
                let keyBytes = bytes[key]
                if keyBytes.elementsEqual("id".utf8) {
                    ids[String(decoding: bytes[value], as: UTF8.self)] = node
                } else if isUse, keyBytes.elementsEqual("href".utf8) || keyBytes.reversed().starts(with: ":href".utf8.reversed()) {
                    let target = bytes[value]
                    if target.first == UInt8(ascii: "#") { targets[node] = String(decoding: target.dropFirst(), as: UTF8.self) }
                }
            }
            if !selfClosing { open.append(node) }
        }

        /// A doctype or other declaration, with its internal subset in brackets.
        private mutating func skipDeclaration() {
            var depth = 0
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "[") { depth += 1 } else if byte == UInt8(ascii: "]") { depth -= 1 } else if byte == UInt8(ascii: ">"), depth <= 0 {
                    return
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    index = min(bytes.count, (find(byte, from: index) ?? bytes.count) + 1)
                }
            }
        }

        private func starts(_ text: String) -> Bool {
            let utf8 = text.utf8
            return bytes.count - index >= utf8.count && bytes[index..<index + utf8.count].elementsEqual(utf8)
        }

        /// The index just past the next `text`, or the end.
        private func end(of text: String) -> Int {
            let pattern = Array(text.utf8)
            var position = index
            while let found = find(pattern[0], from: position) {
                if bytes.count - found >= pattern.count, bytes[found..<found + pattern.count].elementsEqual(pattern) { return found + pattern.count }
                position = found + 1
            }
            return bytes.count
        }

        private func find(_ byte: UInt8, from start: Int) -> Int? {
            var position = start
            while position < bytes.count {
                if bytes[position] == byte { return position }
                position += 1
            }
            return nil
        }

        private func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }
    }
}
