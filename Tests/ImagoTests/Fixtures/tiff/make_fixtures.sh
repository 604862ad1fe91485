#!/bin/sh
# Writes the TIFF fixtures with Pillow, libtiff's tiffcp and ImageMagick, and a
# reference decode of each (NAME.ref.png, RGBA, upright) made by Pillow. Run from this
# folder; the files are committed, so the tests never run this.
set -e
python3 - <<'PY'
from PIL import Image
W, H = 29, 17
rgba = Image.new('RGBA', (W, H))
rgba.putdata([((x * 9) % 256, (y * 15) % 256, (x * y * 5 + 20) % 256,
               255 if x < W // 2 else max(0, 255 - y * 15)) for y in range(H) for x in range(W)])
rgb = rgba.convert('RGB')
rgb.save('rgb8.tif')                                   # uncompressed, strips
rgba.save('rgba8-unassociated.tif')                    # ExtraSamples = unassociated alpha
rgb.convert('L').save('gray8.tif')
rgb.convert('L').point(lambda v: 255 if v > 100 else 0).convert('1').save('bilevel.tif')
rgb.convert('P', palette=Image.ADAPTIVE, colors=16).save('palette4.tif')
rgb.convert('CMYK').save('cmyk8.tif')
rgb.save('rgb8-packbits.tif', compression='packbits')
# Orientation tags: the stored pixels and a tag saying how to turn them.
for tag in (2, 3, 6, 8):
    rgb.save(f'orientation-{tag}.tif', tiffinfo={274: tag})
# Two pages: the first is shown.
rgb.save('multipage.tif', save_all=True, append_images=[rgb.transpose(Image.FLIP_TOP_BOTTOM).resize((7, 5))])
PY
tiffcp -c lzw:2 rgb8.tif rgb8-lzw.tif
tiffcp -B rgb8.tif rgb8-bigendian.tif
tiffcp -c zip -t -w 16 -l 16 rgba8-unassociated.tif rgba8-deflate-tiled.tif
tiffcp -c g4 bilevel.tif bilevel-g4.tif
tiffcp -c jpeg:90 -r 16 rgb8.tif ycbcr-jpeg.tif
convert rgb8.tif -depth 16 -define tiff:alpha=associated rgb16.tif
convert rgba8-unassociated.tif -depth 8 -alpha on -define tiff:alpha=associated rgba8-associated.tif
convert rgb8.tif -colorspace gray -depth 16 gray16.tif
python3 - <<'PY'
import glob
from PIL import Image
for name in sorted(glob.glob('*.tif')):
    if name.startswith('orientation-'):
        continue
    with Image.open(name) as img:
        out = img
        if img.mode in ('I;16', 'I;16B', 'I'):
            out = img.point(lambda v: v / 257).convert('L')
        out.convert('RGBA').save(name[:-4] + '.ref.png')
# The orientation files hold rgb8's pixels; upright is that picture turned as the tag
# says (Pillow's own handling of the tag on TIFF is not relied on).
turn = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 6: Image.ROTATE_270, 8: Image.ROTATE_90}
base = Image.open('rgb8.ref.png')
for tag, op in turn.items():
    base.transpose(op).save(f'orientation-{tag}.ref.png')
PY
