#!/bin/sh
# Writes the HEIC fixtures with libheif's heif-enc (x265) from small PNGs made by
# Pillow, and a reference decode of each with heif-convert as NAME.ref.png. Run from
# this folder; the files are committed, so the tests never run this.
set -e
tmp=$(mktemp -d)
python3 - "$tmp" <<'PY'
import sys
from PIL import Image
out = sys.argv[1]
W, H = 40, 24
img = Image.new('RGBA', (W, H))
img.putdata([((x * 6) % 256, (y * 10) % 256, 128 + (x - y) * 2, 255 if x < 20 else 255 - y * 10)
             for y in range(H) for x in range(W)])
img.save(f'{out}/rgba.png')
img.convert('RGB').save(f'{out}/rgb.png')
PY
heif-enc -q 80 "$tmp/rgb.png" -o still.heic >/dev/null
heif-enc -q 80 "$tmp/rgba.png" -o alpha.heic >/dev/null
heif-enc -L "$tmp/rgb.png" -o lossless.heic >/dev/null
for f in still alpha lossless; do heif-convert $f.heic $f.ref.png >/dev/null; done
rm -rf "$tmp"
