#!/usr/bin/env python3
"""Writes the APNG fixtures with Pillow (which writes each frame as the smallest
rectangle that changed, with the dispose and blend operations asked for), and
Pillow's composited decode of every frame as NAME.N.ref.png. Run from this folder;
the files are committed, so the tests never run this."""
from PIL import Image, ImageDraw

W, H = 32, 20


def frame(background, box, colour):
    img = Image.new('RGBA', (W, H), background)
    ImageDraw.Draw(img).rectangle(box, fill=colour)
    return img


# Opaque frames of the full size, three plays, three durations.
basic = [frame((255, 0, 0, 255), (4, 4, 12, 12), (255, 255, 255, 255)),
         frame((0, 255, 0, 255), (10, 4, 18, 12), (0, 0, 0, 255)),
         frame((0, 0, 255, 255), (16, 4, 24, 12), (255, 255, 0, 255))]
basic[0].save('basic.png', save_all=True, append_images=basic[1:], duration=[100, 200, 50], loop=3)

# A moving square on transparency: sub-rectangles, blended over, then disposed to
# the background or to the previous canvas.
moving = [frame((0, 0, 0, 0), (2 + 6 * i, 3, 9 + 6 * i, 10), (200, 40 + 60 * i, 90, 255)) for i in range(4)]
moving[0].save('dispose-background.png', save_all=True, append_images=moving[1:], duration=80,
               disposal=1, blend=1, loop=0)
moving[0].save('dispose-previous.png', save_all=True, append_images=moving[1:], duration=80,
               disposal=[0, 2, 2, 0], blend=1, loop=0)
# The default image is not part of the animation.
still = frame((10, 10, 10, 255), (0, 0, 5, 5), (250, 250, 250, 255))
still.save('default-not-animated.png', save_all=True, append_images=basic, default_image=True, duration=100)

for name in ('basic', 'dispose-background', 'dispose-previous', 'default-not-animated'):
    with Image.open(name + '.png') as img:
        for i in range(img.n_frames):
            img.seek(i)
            img.convert('RGBA').save(f'{name}.{i}.ref.png')
        print(name, img.n_frames, img.info.get('loop'))

# Pillow's reader keeps the area of a frame disposed to "previous" (the APNG
# specification and browsers put back the canvas from before that frame), so the
# reference for that file is computed: the first square stays (disposal none), each
# later one shows over it alone.
for i in range(4):
    canvas = moving[0].copy()
    if i:
        canvas.alpha_composite(moving[i])
    canvas.save(f'dispose-previous.{i}.ref.png')
