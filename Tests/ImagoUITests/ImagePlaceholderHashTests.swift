import Foundation
import Testing
import Imago
import ImagoUI
import _ImagoTestSupport

/// `ImagePlaceholder`, the views' face of the two hashes.
@Suite struct ImagePlaceholderHashTests {
    @Test func decodesEitherHashForTheViews() throws {
        let thumb = ImagePlaceholder.thumbHash("1QcSHQRnh493V4dIh4eXh1h4kJUI")
        #expect(try thumb.bitmap() == ThumbHash.decode(base64: "1QcSHQRnh493V4dIh4eXh1h4kJUI"))
        #expect(thumb.image?.bitmap.width == 23 && thumb.image?.bitmap.height == 32)
        let blur = ImagePlaceholder.blurHash("LEHV6nWB2yk8pyo0adR*.7kCMdnj", size: .init(width: 40, height: 30))
        #expect(try blur.bitmap() == BlurHash.decode("LEHV6nWB2yk8pyo0adR*.7kCMdnj", width: 40, height: 30))
        #expect(ImagePlaceholder.blurHash("LEHV6nWB2yk8pyo0adR*.7kCMdnj").image?.bitmap.width == 32)
        // A malformed hash: the typed error, and no image for the views.
        #expect(throws: ImagoError.self) { try ImagePlaceholder.thumbHash("!!").bitmap() }
        #expect(ImagePlaceholder.blurHash("LEHV6").image == nil)
    }
}
