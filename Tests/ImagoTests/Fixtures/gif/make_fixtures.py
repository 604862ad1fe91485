#!/usr/bin/env python3
"""Writes GIFs whose first frame does not fit their logical screen, and Pillow's
decode of each as NAME.ref.png. Pillow, like Chrome and Firefox, grows the image to
the first frame. Run from this folder; the files are committed, so the tests never
run this."""
from PIL import Image, ImageDraw

# A 40x30 palette image, a green rectangle on black.
image = Image.new('P', (40, 30), 0)
image.putpalette([0, 0, 0, 0, 200, 0] + [0] * 762)
ImageDraw.Draw(image).rectangle((10, 10, 30, 20), fill=1)
image.save('frame-larger-than-screen.gif')
data = bytearray(open('frame-larger-than-screen.gif', 'rb').read())

# The logical screen's width and height (bytes 6 to 9, little-endian) made smaller
# than the frame, then 0x0, as some encoders wrote it.
for name, (width, height) in {'frame-larger-than-screen': (20, 15), 'empty-screen': (0, 0)}.items():
    patched = bytearray(data)
    patched[6:10] = bytes([width & 255, width >> 8, height & 255, height >> 8])
    open(name + '.gif', 'wb').write(patched)
    Image.open(name + '.gif').convert('RGBA').save(name + '.ref.png')
