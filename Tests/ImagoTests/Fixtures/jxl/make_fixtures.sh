#!/bin/sh
# Writes the JPEG XL fixtures with libjxl's cjxl (Debian's libjxl-tools 0.7) from
# small images made by Pillow: the PNG sources are kept beside them (rgba.png is
# what the lossless file must decode to). The tests compare each file with djxl's
# decode, made at test time. Run from this folder; the files are committed, so the
# tests never run this.
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
img.save('rgba.png')
img.convert('RGB').save('rgb.png')
# The same colours in Adobe RGB (colord's profile): a lossless file keeps them so.
img.convert('RGB').save('adobe-rgb.png', icc_profile=open('/usr/share/color/icc/colord/AdobeRGB1998.icc', 'rb').read())
exif = Image.Exif()
exif[0x0112] = 6
img.convert('RGB').save(f'{out}/orientation-6.png', exif=exif.tobytes())
gray = Image.new('LA', (16, 8))
gray.putdata([(x * 16, y * 30) for y in range(8) for x in range(16)])
gray.save(f'{out}/gray-alpha.png')
# 2048² of a smooth gradient with alpha: libjxl keeps a lossy one in floats.
small = Image.new('RGBA', (32, 32))
small.putdata([(x * 8, y * 8, (x + y) * 4, 128 + x * 4) for y in range(32) for x in range(32)])
small.resize((2048, 2048), Image.BILINEAR).save(f'{out}/large-alpha.png')
# A gray ramp over every 16-bit signal value, 256 × 8, as 16-bit RGB (which Pillow
# does not write) and as 16-bit gray: tagged PQ or HLG by cjxl's colour-space hint.
import struct, zlib
def chunk(kind, body):
    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))
row = b'\0' + b''.join(struct.pack('>HHH', v, v, v) for v in (round(x / 255 * 65535) for x in range(256)))
with open(f'{out}/ramp16.png', 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 256, 8, 16, 2, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(row * 8)) + chunk(b'IEND', b''))
row = b'\0' + b''.join(struct.pack('>H', round(x / 255 * 65535)) for x in range(256))
with open(f'{out}/gray-ramp16.png', 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 256, 8, 16, 0, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(row * 8)) + chunk(b'IEND', b''))
frames = [Image.new('RGB', (20, 12), c) for c in [(255, 0, 0), (0, 255, 0), (0, 0, 255)]]
frames[0].save(f'{out}/animated.gif', save_all=True, append_images=frames[1:], duration=[100, 300, 100], loop=0)
PY
cjxl -d 0 rgba.png lossless-alpha.jxl >/dev/null 2>&1
cjxl -d 1 rgb.png lossy.jxl >/dev/null 2>&1
cjxl -d 0 --container=1 rgb.png container.jxl >/dev/null 2>&1
cjxl -d 0 "$tmp/orientation-6.png" orientation-6.jxl >/dev/null 2>&1
cjxl -d 0 "$tmp/animated.gif" animated.jxl >/dev/null 2>&1
cjxl -d 0 "$tmp/gray-alpha.png" gray-alpha.jxl >/dev/null 2>&1
cjxl -d 0 adobe-rgb.png lossless-adobe-rgb.jxl >/dev/null 2>&1
cjxl -d 2 "$tmp/large-alpha.png" slow/lossy-alpha.jxl >/dev/null 2>&1
cjxl -d 0 -x color_space=RGB_D65_202_Rel_PeQ "$tmp/ramp16.png" pq.jxl >/dev/null 2>&1
cjxl -d 0 -x color_space=RGB_D65_202_Rel_HLG "$tmp/ramp16.png" hlg.jxl >/dev/null 2>&1
cjxl -d 1 -x color_space=RGB_D65_202_Rel_PeQ "$tmp/ramp16.png" pq-lossy.jxl >/dev/null 2>&1
cjxl -d 0 -x color_space=Gra_D65_Rel_PeQ "$tmp/gray-ramp16.png" gray-pq.jxl >/dev/null 2>&1
rm -rf "$tmp"
