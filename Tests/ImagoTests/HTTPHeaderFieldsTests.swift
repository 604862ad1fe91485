import Foundation
import Testing
@testable import Imago

/// The one check every request field passes before anything is sent, and the merge of
/// a request's fields over a loader's, against the grammar written out by hand.
@Suite struct HTTPHeaderFieldsTests {
    let url = URL(string: "http://127.0.0.1/a.png")!

    /// RFC 9110 §5.6.2's tchar, spelled as the RFC lists it.
    static let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".unicodeScalars)

    func accepts(_ name: String, _ value: String = "v") -> Bool {
        do throws(ImagoError) {
            try HTTPHeaderFields.check(name, value, url: url)
            return true
        } catch {
            guard case .invalidRequest(_, let reason) = error else {
                Issue.record("not an invalid request: \(error)")
                return false
            }
            #expect(reason.hasSuffix("the request was not sent"))
            return false
        }
    }

    @Test func everyASCIICharacterIsANameCharacterExactlyWhenTheGrammarSaysSo() {
        for value in UInt32(0)..<128 {
            let scalar = Unicode.Scalar(value)!
            let name = "X" + String(scalar) + "Y"
            #expect(accepts(name) == Self.tokenCharacters.contains(scalar), "U+\(String(value, radix: 16))")
        }
    }

    @Test func namesBeyondASCIIOrEmptyAreRefused() {
        for name in ["", "X-Naïve", "Ümlaut", "X-\u{7F}", "X-\u{80}", "頭", "X-Emoji-🙂"] {
            #expect(!accepts(name), "\(name.debugDescription)")
        }
        #expect(accepts("If-None-Match") && accepts("x-a_b.c~d|e^f`g'h*i+j!k#l$m%n&o"))
    }

    @Test func valuesAreRefusedForALineBreakOrNULOnly() {
        for value in ["a\rb", "a\nb", "a\r\nb", "a\u{0}b", "\r\n", String(repeating: "x", count: 4_000) + "\n"] {
            #expect(!accepts("X-Note", value), "\(value.debugDescription)")
        }
        for value in ["", "naïve \t value", "\"etag\"", "Tue, 15 Nov 1994 08:12:31 GMT", String(repeating: "é", count: 4_000)] {
            #expect(accepts("X-Note", value), "\(value.prefix(20).debugDescription)")
        }
        // A string from NSString: on Apple platforms it may have no contiguous UTF-8 of
        // its own, and the check walks it instead.
        let foreign = NSString(string: "fine\nX-Injected: yes") as String
        #expect(!accepts("X-Note", foreign))
    }

    @Test func namesCompareIgnoringTheCaseOfASCIILettersOnly() {
        #expect("Content-Length".equalsIgnoringASCIICase("content-LENGTH"))
        #expect("If-None-Match".equalsIgnoringASCIICase("If-None-Match"))
        #expect(!"User-Agent".equalsIgnoringASCIICase("User-Agents"))
        // Bytes that differ only in the 0x20 bit but are not letters.
        #expect(!"a@".equalsIgnoringASCIICase("a`") && !"[".equalsIgnoringASCIICase("{") && !"1".equalsIgnoringASCIICase("\u{11}"))
        // Letters beyond ASCII keep their case, as HTTP names have none.
        #expect(!"Ü".equalsIgnoringASCIICase("ü"))
    }

    @Test func aRequestsFieldReplacesTheLoadersOfTheSameNameWhateverItsCase() throws {
        let merged = try HTTPHeaderFields.merge(
            ["user-agent": "Job/1", "If-None-Match": "\"v1\""],
            over: ["User-Agent": "Imago/0", "X-Feed": "3", "Accept": "image/png"], url: url)
        #expect(merged.map(\.name) == ["Accept", "X-Feed", "If-None-Match", "user-agent"])
        #expect(merged.map(\.value) == ["image/png", "3", "\"v1\"", "Job/1"])
        #expect(HTTPHeaderFields.withDefaultUserAgent(["USER-AGENT": "Gallery/2"]) == ["USER-AGENT": "Gallery/2"])
        #expect(HTTPHeaderFields.withDefaultUserAgent(["X-Feed": "3"])["User-Agent"] == HTTPLoaderConfiguration.defaultUserAgent)
        #expect(throws: ImagoError.self) {
            try HTTPHeaderFields.merge(["X Bad": "1"], over: [:], url: url)
        }
    }
}
