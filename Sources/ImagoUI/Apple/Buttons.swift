// Buttons' images by state, as SDWebImage's `UIButton+WebCache` and `NSButton+WebCache`
// set them: each state's image and background image is a slot of the button, loaded
// on a binding of its own (`ImageTargetLoader.setImage(with:on:slot:)`), where every
// rule lives and is tested on Linux. Not compiled on Linux.

#if canImport(UIKit) && !os(watchOS)
import UIKit
import Imago

extension UIButton {
    /// Loads `url` as the button's image for `state`, as SDWebImage's
    /// `sd_setImageWithURL:forState:placeholderImage:`: the previous load of that
    /// state's image is cancelled (other states' and the background's go on), the
    /// placeholder is set at once (else the state's image stays until the new one),
    /// an image in memory is set before this returns, and a nil URL sets the
    /// placeholder and loads nothing. Decoded at full size unless `options` say.
    @discardableResult
    public func setImage(
        with url: URL?, for state: UIControl.State, placeholder: DecodedImage? = nil,
        options: ImageDisplayOptions = ImageDisplayOptions(transition: .none, indicator: .none),
        loader: ImageTargetLoader = .shared,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        let scale = Double(traitCollection.displayScale > 0 ? traitCollection.displayScale : 1)
        return loader.setImage(
            with: url, on: self, slot: "image.\(state.rawValue)", placeholder: placeholder, options: options,
            render: { [weak self] content in self?.setImage(content.image?.platformImage(scale: scale), for: state) },
            current: { [weak self] in self?.image(for: state).flatMap(DecodedImage.init(platformImage:)) },
            completion: completion)
    }

    /// Loads `url` as the button's background image for `state`, as SDWebImage's
    /// `sd_setBackgroundImageWithURL:forState:placeholderImage:`, on a binding of
    /// its own, with the rules of `setImage(with:for:)`.
    @discardableResult
    public func setBackgroundImage(
        with url: URL?, for state: UIControl.State, placeholder: DecodedImage? = nil,
        options: ImageDisplayOptions = ImageDisplayOptions(transition: .none, indicator: .none),
        loader: ImageTargetLoader = .shared,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        let scale = Double(traitCollection.displayScale > 0 ? traitCollection.displayScale : 1)
        return loader.setImage(
            with: url, on: self, slot: "background.\(state.rawValue)", placeholder: placeholder, options: options,
            render: { [weak self] content in self?.setBackgroundImage(content.image?.platformImage(scale: scale), for: state) },
            current: { [weak self] in self?.backgroundImage(for: state).flatMap(DecodedImage.init(platformImage:)) },
            completion: completion)
    }

    /// Cancels the loads of the button's images for `state` (every state when nil),
    /// the background's too; what they show stays.
    public func cancelImageLoads(for state: UIControl.State? = nil, loader: ImageTargetLoader = .shared) {
        guard let state else { return loader.cancelSlotLoads(of: self) }
        loader.cancelSlotLoads(of: self, prefix: "image.\(state.rawValue)")
        loader.cancelSlotLoads(of: self, prefix: "background.\(state.rawValue)")
    }
}

#elseif canImport(AppKit)
import AppKit
import Imago

extension NSButton {
    /// Loads `url` as the button's image, as SDWebImage's `NSButton+WebCache`: the
    /// previous load of the image is cancelled (the alternate image's goes on), the
    /// placeholder is set at once, an image in memory before this returns, and a nil
    /// URL sets the placeholder and loads nothing.
    @discardableResult
    public func setImage(
        with url: URL?, placeholder: DecodedImage? = nil,
        options: ImageDisplayOptions = ImageDisplayOptions(transition: .none, indicator: .none),
        loader: ImageTargetLoader = .shared,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        let scale = Double(window?.backingScaleFactor ?? 1)
        return loader.setImage(
            with: url, on: self, slot: "image", placeholder: placeholder, options: options,
            render: { [weak self] content in self?.image = content.image?.platformImage(scale: scale) },
            current: { [weak self] in self?.image.flatMap(DecodedImage.init(platformImage:)) },
            completion: completion)
    }

    /// Loads `url` as the button's alternate image (shown in its on state), on a
    /// binding of its own, with the rules of `setImage(with:)`.
    @discardableResult
    public func setAlternateImage(
        with url: URL?, placeholder: DecodedImage? = nil,
        options: ImageDisplayOptions = ImageDisplayOptions(transition: .none, indicator: .none),
        loader: ImageTargetLoader = .shared,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        let scale = Double(window?.backingScaleFactor ?? 1)
        return loader.setImage(
            with: url, on: self, slot: "alternate", placeholder: placeholder, options: options,
            render: { [weak self] content in self?.alternateImage = content.image?.platformImage(scale: scale) },
            current: { [weak self] in self?.alternateImage.flatMap(DecodedImage.init(platformImage:)) },
            completion: completion)
    }

    /// Cancels the loads of the button's image and alternate image; what they show stays.
    public func cancelImageLoads(loader: ImageTargetLoader = .shared) {
        loader.cancelSlotLoads(of: self)
    }
}
#endif
