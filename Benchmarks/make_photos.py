#!/usr/bin/env python3
"""Makes the benchmark's photo sets from the real photographs in the shared corpus.

    make_photos.py --corpus ../shared/corpus --out .build/bench

writes OUT/photos/: 300 "web-size" JPEGs (1280 px on the long side, baseline, 4:2:0,
quality 85, nudged between 76 and 94 to land at 150-250 KB where the photo allows, like
photos served on the web), OUT/large/: 40 JPEGs of 4000 px on the long side
(quality 85) for the memory figures, and OUT/avif/: the first 60 web-size photos as
AVIF (quality 60, 4:2:0, Pillow's encoder), as CDNs serve them to browsers that ask. Every file is a different crop (offset,
size, aspect) of one of the corpus photos, so no two decode alike. The output is
deterministic: a fixed random start drives every choice. Each folder gets a `.complete` marker
last, so an interrupted run is redone rather than used half-made.
"""

import argparse
import io
import random
import sys
from pathlib import Path

from PIL import Image

WEB_COUNT, WEB_LONG_SIDE = 300, 1280
LARGE_COUNT, LARGE_LONG_SIDE = 40, 4000
QUALITY = 85
# Web-size files are nudged into this size band (bytes) by a quality between these.
WEB_BYTES, WEB_QUALITIES = (150_000, 250_000), (76, 94)
AVIF_COUNT, AVIF_QUALITY = 60, 60
RANDOM_START = 20240501


def sources(corpus: Path) -> list[Path]:
    """The real photographs the sets are cut from; fails clearly when any is missing."""
    if not corpus.is_dir():
        sys.exit(f"make_photos.py: no shared corpus at {corpus}; the benchmark photos are cut "
                 f"from its photographs. Give its place with CORPUS=DIR (make) or --corpus DIR.")
    photos = sorted((corpus / "photos/unsplash").glob("*.jpg"))
    photos += sorted((corpus / "photos/kodak").glob("*.png"))
    photos += [corpus / "jpeg/exif-orientation/Landscape_1.jpg",
               corpus / "jpeg/exif-orientation/Portrait_1.jpg",
               corpus / "jpeg/jpeg-decoder/benches/large_image.jpg"]
    missing = [str(p) for p in photos if not p.is_file()]
    for pattern in ("photos/unsplash/*.jpg", "photos/kodak/*.png"):
        if not any(corpus.glob(pattern)):
            missing.append(str(corpus / pattern))
    if missing:
        sys.exit(f"make_photos.py: the shared corpus at {corpus} lacks {', '.join(missing)}")
    return photos


def load(path: Path) -> Image.Image:
    image = Image.open(path)
    image.load()
    return image.convert("RGB")


def random_crop(image: Image.Image, rng: random.Random, smallest: float) -> Image.Image:
    """A crop of between `smallest` and all of each side, at a random offset."""
    width, height = image.size
    crop_width = round(width * rng.uniform(smallest, 1.0))
    crop_height = round(height * rng.uniform(smallest, 1.0))
    left = rng.randint(0, width - crop_width)
    top = rng.randint(0, height - crop_height)
    return image.crop((left, top, left + crop_width, top + crop_height))


def scaled(image: Image.Image, long_side: int) -> Image.Image:
    width, height = image.size
    factor = long_side / max(width, height)
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    return image.resize(size, Image.Resampling.LANCZOS)


def encoded(photo: Image.Image, size_band: tuple[int, int] | None) -> bytes:
    """The photo as a JPEG of quality 85, or, when a size band is given and 85 falls
    outside it, of the nearest quality (in steps of 3) that lands inside it."""
    def jpeg(quality: int) -> bytes:
        out = io.BytesIO()
        photo.save(out, "JPEG", quality=quality, subsampling="4:2:0", optimize=False)
        return out.getvalue()

    data, quality = jpeg(QUALITY), QUALITY
    if size_band is None:
        return data
    low, high = size_band
    step = 3 if len(data) < low else -3
    while not low <= len(data) <= high and WEB_QUALITIES[0] <= quality + step <= WEB_QUALITIES[1]:
        quality += step
        data = jpeg(quality)
        if (step > 0) != (len(data) < low):  # overshot the band: keep the nearer side
            break
    return data


def make_set(images: list[Image.Image], folder: Path, count: int, long_side: int,
             smallest: float, rng: random.Random, size_band: tuple[int, int] | None) -> list[int]:
    """Writes `count` crops, taking the sources in turn; returns the file sizes."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".complete").unlink(missing_ok=True)
    for old in folder.glob("*.jpg"):
        old.unlink()
    sizes = []
    for index in range(count):
        source = images[index % len(images)]
        # Sources smaller than the target (Kodak's 768 px) are cropped less, so the
        # upscale stays moderate and the photo keeps its detail.
        floor = smallest if max(source.size) >= long_side else max(smallest, 0.85)
        photo = scaled(random_crop(source, rng, floor), long_side)
        path = folder / f"photo-{index:03d}.jpg"
        data = encoded(photo, size_band)
        path.write_bytes(data)
        sizes.append(len(data))
    (folder / ".complete").write_text(f"{count} files\n")
    return sizes


def make_avif_set(photos: Path, folder: Path) -> list[int]:
    """The first AVIF_COUNT web-size photos again as AVIF; returns the file sizes."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".complete").unlink(missing_ok=True)
    sizes = []
    for path in sorted(photos.glob("*.jpg"))[:AVIF_COUNT]:
        out = io.BytesIO()
        load(path).save(out, "AVIF", quality=AVIF_QUALITY, subsampling="4:2:0", speed=8)
        (folder / (path.stem + ".avif")).write_bytes(out.getvalue())
        sizes.append(len(out.getvalue()))
    (folder / ".complete").write_text(f"{len(sizes)} files\n")
    return sizes


def summary(name: str, sizes: list[int]) -> str:
    kb = sorted(size / 1000 for size in sizes)
    return (f"{name}: {len(kb)} files, {sum(kb) / 1000:.1f} MB, "
            f"{kb[0]:.0f}-{kb[-1]:.0f} KB (median {kb[len(kb) // 2]:.0f} KB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("../shared/corpus"))
    parser.add_argument("--out", type=Path, default=Path(".build/bench"))
    args = parser.parse_args()

    complete = lambda name: (args.out / name / ".complete").is_file()
    if not (complete("photos") and complete("large")):
        paths = sources(args.corpus)
        images = [load(path) for path in paths]
        rng = random.Random(RANDOM_START)
        web = make_set(images, args.out / "photos", WEB_COUNT, WEB_LONG_SIDE, 0.55, rng, WEB_BYTES)
        print(summary(str(args.out / "photos"), web))
        # The large set comes from the unsplash photos only: the others would need a
        # fivefold upscale, and the result would not look like a 4000 px photo to the codec.
        unsplash = [image for path, image in zip(paths, images) if "unsplash" in path.parts]
        large = make_set(unsplash, args.out / "large", LARGE_COUNT, LARGE_LONG_SIDE, 0.7, rng, None)
        print(summary(str(args.out / "large"), large))
    if not complete("avif"):
        print(summary(str(args.out / "avif"), make_avif_set(args.out / "photos", args.out / "avif")))


if __name__ == "__main__":
    main()
