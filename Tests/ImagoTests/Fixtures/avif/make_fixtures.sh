#!/bin/sh
# Writes the AVIF fixtures with libavif's avifenc (aom encoder) from small PNGs made
# by Pillow, and a reference decode of each with avifdec (dav1d) as NAME.ref.png, 8
# bits (frame N of a sequence as NAME.N.ref.png). The orientation fixture's reference
# is its stored picture turned by Pillow as irot/imir say. Run from this folder; the
# files are committed, so the tests never run this.
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
for i, colour in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
    frame = Image.new('RGB', (W, H), colour)
    frame.paste((255, 255, 255), (i * 10, 4, i * 10 + 8, 12))
    frame.save(f'{out}/frame{i}.png')
PY
enc="avifenc -c aom -s 8 -j 1"
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 -y 420 "$tmp/rgb.png" still-420.avif >/dev/null
$enc -l "$tmp/rgb.png" lossless-444.avif >/dev/null
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 -d 10 "$tmp/rgb.png" ten-bit.avif >/dev/null
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 -d 12 -y 444 "$tmp/rgb.png" twelve-bit.avif >/dev/null
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 "$tmp/rgba.png" alpha.avif >/dev/null
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 --irot 1 --imir 1 "$tmp/rgb.png" irot1-imir1.avif >/dev/null
# Tall images of changing colours with alpha, subsampled both ways: a thumbnail
# converts them in bands of rows.
python3 - "$tmp" <<'PY'
import sys
from PIL import Image
tall = Image.new('RGBA', (64, 2100))
tall.putdata([((x * 4 + y) % 256, (y * 7) % 256, (x * 9 + y * 3) % 256, 255 - y % 97) for y in range(2100) for x in range(64)])
tall.save(f'{sys.argv[1]}/tall.png')
PY
mkdir -p bands
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 -y 420 "$tmp/tall.png" bands/tall-420.avif >/dev/null
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 -y 422 "$tmp/tall.png" bands/tall-422.avif >/dev/null
$enc --min 8 --max 16 --minalpha 8 --maxalpha 16 --fps 10 "$tmp/frame0.png" --duration 3 "$tmp/frame1.png" --duration 1 "$tmp/frame2.png" animated.avif >/dev/null
for f in still-420 lossless-444 ten-bit twelve-bit alpha irot1-imir1; do
  avifdec -c dav1d -d 8 $f.avif $f.ref.png >/dev/null
done
for i in 0 1 2; do avifdec -c dav1d -d 8 --index $i animated.avif animated.$i.ref.png >/dev/null; done
python3 - <<'PY'
from PIL import Image
# irot 1 (a quarter turn anticlockwise), then imir 1 (left and right exchanged).
Image.open('irot1-imir1.ref.png').transpose(Image.ROTATE_90).transpose(Image.FLIP_LEFT_RIGHT).save('irot1-imir1.ref.png')
PY
rm -rf "$tmp"
