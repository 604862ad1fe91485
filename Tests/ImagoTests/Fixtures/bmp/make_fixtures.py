#!/usr/bin/env python3
"""Writes the BMP and ICO/CUR fixtures byte by byte (every header version, bit depth
and compression the decoder handles), then decodes each with Pillow into a reference
PNG beside it (NAME.ref.png, RGBA). The tests compare Imago's decode with the
reference. Run from this folder; needs Pillow. The files are committed, so the tests
never run this."""
import struct, zlib, io
from PIL import Image

W, H = 23, 13  # odd sizes, so every row needs padding


def source_rgba(w=W, h=H):
    """A picture whose pixels all differ: gradients, a block of colour, soft alpha."""
    px = []
    for y in range(h):
        for x in range(w):
            a = 255 if x < w // 2 else max(0, 255 - (y * 255) // max(h - 1, 1))
            px.append(((x * 11) % 256, (y * 19) % 256, (x * y * 3 + 40) % 256, a))
    return px


def palette_image(bits, w=W, h=H):
    n = 1 << bits
    pal = [((i * 53) % 256, (i * 97 + 30) % 256, (i * 151 + 60) % 256) for i in range(n)]
    idx = [((x + 2 * y) * 7 // 3) % n for y in range(h) for x in range(w)]
    return pal, idx


def rows_bottom_up(rows, top_down=False):
    return rows if top_down else rows[::-1]


def pack_indices(idx, bits, w, h):
    rows = []
    for y in range(h):
        bitstr = 0
        out = bytearray()
        acc, n = 0, 0
        for x in range(w):
            acc = (acc << bits) | idx[y * w + x]
            n += bits
            if n == 8:
                out.append(acc); acc, n = 0, 0
        if n:
            out.append(acc << (8 - n))
        while len(out) % 4:
            out.append(0)
        rows.append(bytes(out))
    return rows


def pad(row):
    row = bytearray(row)
    while len(row) % 4:
        row.append(0)
    return bytes(row)


def info_header(size, w, h, bpp, compression=0, colors=0, masks=None, image_size=0):
    hdr = struct.pack('<IiiHHIIiiII', size, w, h, 1, bpp, compression, image_size, 2835, 2835, colors, 0)
    if size >= 52:
        m = list(masks or [0, 0, 0, 0]) + [0] * 4
        hdr += struct.pack('<III', *m[:3])
        if size >= 56:
            hdr += struct.pack('<I', m[3])
        if size >= 108:
            hdr += b'sRGB'[::-1] + bytes(36) + bytes(12)  # LCS_sRGB, endpoints, gamma
        if size >= 124:
            hdr += struct.pack('<IIII', 4, 0, 0, 0)  # intent, profile data, size, reserved
    assert len(hdr) == size, (len(hdr), size)
    return hdr


def bmp_file(header, extra, pixels):
    off = 14 + len(header) + len(extra)
    return b'BM' + struct.pack('<IHHI', off + len(pixels), 0, 0, off) + header + extra + pixels


def pal_bytes(pal, entry=4):
    return b''.join(bytes((b, g, r)) + (b'\0' if entry == 4 else b'') for r, g, b in pal)


files = {}

# Palette images, 1, 4 and 8 bits, bottom-up.
for bits in (1, 4, 8):
    pal, idx = palette_image(bits)
    pixels = b''.join(rows_bottom_up(pack_indices(idx, bits, W, H)))
    files[f'pal{bits}.bmp'] = bmp_file(info_header(40, W, H, bits, colors=len(pal)), pal_bytes(pal), pixels)

# 8 bits with a short palette (colours used 100): indices past it are opaque black.
pal, idx = palette_image(8)
files['pal8-short.bmp'] = bmp_file(info_header(40, W, H, 8, colors=100), pal_bytes(pal[:100]),
                                   b''.join(rows_bottom_up(pack_indices(idx, 8, W, H))))

# 8 bits, top-down (negative height).
files['pal8-topdown.bmp'] = bmp_file(info_header(40, W, -H, 8, colors=256), pal_bytes(pal),
                                     b''.join(rows_bottom_up(pack_indices(idx, 8, W, H), top_down=True)))

# OS/2 v1: a 12-byte header with 16-bit sizes and 3-byte palette entries.
core = struct.pack('<IHHHH', 12, W, H, 1, 8)
files['pal8-os2v1.bmp'] = bmp_file(core, pal_bytes(pal, 3), b''.join(rows_bottom_up(pack_indices(idx, 8, W, H))))
core24 = struct.pack('<IHHHH', 12, W, H, 1, 24)

src = source_rgba()


def rgb_rows(fn, bytes_per_pixel):
    rows = []
    for y in range(H):
        row = b''.join(fn(*src[y * W + x]) for x in range(W))
        rows.append(pad(row))
    return rows


rgb24 = b''.join(rows_bottom_up(rgb_rows(lambda r, g, b, a: bytes((b, g, r)), 3)))
files['rgb24.bmp'] = bmp_file(info_header(40, W, H, 24), b'', rgb24)
files['rgb24-os2v1.bmp'] = bmp_file(core24, b'', rgb24)
# The last row's padding left out, as some writers do.
files['rgb24-nopad.bmp'] = bmp_file(info_header(40, W, H, 24), b'', rgb24[:-(4 - (W * 3) % 4)])
# Every header version a Windows writer uses, same pixels.
files['rgb24-v4.bmp'] = bmp_file(info_header(108, W, H, 24), b'', rgb24)
files['rgb24-v5.bmp'] = bmp_file(info_header(124, W, H, 24), b'', rgb24)

# 16 bits: the default 5-5-5, and 5-6-5 through BI_BITFIELDS after a 40-byte header.
def p555(r, g, b, a):
    return struct.pack('<H', (r >> 3) << 10 | (g >> 3) << 5 | b >> 3)
def p565(r, g, b, a):
    return struct.pack('<H', (r >> 3) << 11 | (g >> 2) << 5 | b >> 3)
files['rgb555.bmp'] = bmp_file(info_header(40, W, H, 16), b'', b''.join(rows_bottom_up(rgb_rows(p555, 2))))
files['rgb565.bmp'] = bmp_file(info_header(40, W, H, 16, compression=3), struct.pack('<III', 0xF800, 0x07E0, 0x001F),
                               b''.join(rows_bottom_up(rgb_rows(p565, 2))))
# 16 bits with 4-4-4-4 alpha through a v3 (56-byte) header.
def p4444(r, g, b, a):
    return struct.pack('<H', (a >> 4) << 12 | (r >> 4) << 8 | (g >> 4) << 4 | b >> 4)
files['argb4444-v3.bmp'] = bmp_file(info_header(56, W, H, 16, compression=3, masks=[0x0F00, 0x00F0, 0x000F, 0xF000]), b'',
                                    b''.join(rows_bottom_up(rgb_rows(p4444, 2))))

# 32 bits.
def bgra(r, g, b, a):
    return bytes((b, g, r, a))
def bgr0(r, g, b, a):
    return bytes((b, g, r, 0))
argb = b''.join(rows_bottom_up(rgb_rows(bgra, 4)))
files['argb32-v5.bmp'] = bmp_file(info_header(124, W, H, 32, compression=3, masks=[0xFF0000, 0xFF00, 0xFF, 0xFF000000]), b'', argb)
files['argb32-alphabitfields.bmp'] = bmp_file(info_header(40, W, H, 32, compression=6),
                                              struct.pack('<IIII', 0xFF0000, 0xFF00, 0xFF, 0xFF000000), argb)
# BI_RGB with alpha in the top byte (browsers use it) and with that byte all zero (opaque).
files['argb32-birgb.bmp'] = bmp_file(info_header(40, W, H, 32), b'', argb)
files['xrgb32-zero-alpha.bmp'] = bmp_file(info_header(40, W, H, 32), b'', b''.join(rows_bottom_up(rgb_rows(bgr0, 4))))
# Unusual masks: 10-bit channels (the top 8 bits count) in a v3 header.
def p1010102(r, g, b, a):
    return struct.pack('<I', (r << 2 | r >> 6) << 20 | (g << 2 | g >> 6) << 10 | (b << 2 | b >> 6))
files['rgb101010.bmp'] = bmp_file(info_header(56, W, H, 32, compression=3, masks=[0x3FF00000, 0x000FFC00, 0x3FF, 0]), b'',
                                  b''.join(rows_bottom_up(rgb_rows(p1010102, 4))))


# RLE: runs, absolute stretches (odd lengths, so the padding is exercised), end of
# line, end of bitmap.
def rle_encode(idx, w, h, bits):
    out = bytearray()
    for y in range(h - 1, -1, -1):
        row = idx[y * w:(y + 1) * w]
        x = 0
        while x < w:
            run = 1
            if bits == 8:
                while x + run < w and row[x + run] == row[x] and run < 255:
                    run += 1
            else:
                while x + run < w and row[x + run] == row[x + (run % 2)] and run < 255:
                    run += 1
            if run >= 3 or w - x < 3:
                run = min(run, w - x)
                val = row[x] if bits == 8 else (row[x] << 4 | (row[x + 1] if x + 1 < w else 0))
                out += bytes((run, val))
                x += run
            else:
                n = min(w - x, 5 if bits == 8 else 7)  # odd literal stretches
                out += bytes((0, n))
                lit = row[x:x + n]
                if bits == 8:
                    data = bytes(lit)
                else:
                    lit = list(lit) + [0]
                    data = bytes(lit[i] << 4 | lit[i + 1] for i in range(0, n, 2))
                out += data + (b'\0' if len(data) % 2 else b'')
                x += n
        out += b'\0\0'
    out += b'\0\1'
    return bytes(out)


for bits in (4, 8):
    pal, idx = palette_image(bits)
    # Long stretches of one index, so there are runs to encode as runs.
    idx = [idx[y * W + (x // 4) * 4] if y % 3 else idx[y * W + x] for y in range(H) for x in range(W)]
    files[f'rle{bits}.bmp'] = bmp_file(info_header(40, W, H, bits, compression=2 if bits == 4 else 1, colors=len(pal)),
                                       pal_bytes(pal), rle_encode(idx, W, H, bits))

# RLE8 with a delta and early ends of line: the skipped pixels are transparent.
pal, _ = palette_image(8)
stream = bytes((5, 1, 0, 0,  # row 0 (bottom): 5 pixels of index 1, end of line
                0, 2, 3, 2,  # delta: 3 right, 2 up, from (0, 1) to (3, 3)
                4, 2,  # 4 pixels of index 2 at row 3, the top one
                0, 1))  # end of bitmap
files['rle8-delta.bmp'] = bmp_file(info_header(40, 8, 4, 8, compression=1, colors=256), pal_bytes(pal), stream)


# ICO and CUR: several entries, bitmap (with AND mask) and PNG.
def ico_bmp_entry(w, h, bits, alpha=False):
    if bits == 32:
        px = source_rgba(w, h)
        rows = [pad(b''.join(bgra(*(px[y * w + x] if alpha else px[y * w + x][:3] + (0,))) for x in range(w))) for y in range(h)]
        pal = []
    else:
        pal, idx = palette_image(bits, w, h)
        rows = pack_indices(idx, bits, w, h)
    # AND mask: a transparent diagonal band and corner.
    mask_rows = []
    for y in range(h):
        bitsrow = [1 if (abs(x - y) < 2 or (x < 3 and y < 3)) else 0 for x in range(w)]
        mask_rows.append(pack_indices(bitsrow, 1, w, 1)[0])
    header = info_header(40, w, 2 * h, bits, colors=len(pal))
    return header + pal_bytes(pal) + b''.join(rows[::-1]) + b''.join(mask_rows[::-1])


def png_entry(w, h):
    img = Image.new('RGBA', (w, h))
    img.putdata(source_rgba(w, h))
    out = io.BytesIO()
    img.save(out, 'PNG')
    return out.getvalue()


def ico_file(entries, kind=1):
    head = struct.pack('<HHH', 0, kind, len(entries))
    offset = 6 + 16 * len(entries)
    directory, data = b'', b''
    for w, h, bits, blob in entries:
        directory += struct.pack('<BBBBHHII', w % 256, h % 256, 0 if bits >= 8 else 1 << bits, 0,
                                 1 if kind == 1 else 3, bits if kind == 1 else 5, len(blob), offset + len(data))
        data += blob
    return head + directory + data


entries = [(16, 16, 4, ico_bmp_entry(16, 16, 4)),
           (32, 32, 8, ico_bmp_entry(32, 32, 8)),
           (48, 48, 32, ico_bmp_entry(48, 48, 32, alpha=True)),
           (24, 24, 1, ico_bmp_entry(24, 24, 1)),
           (20, 20, 32, ico_bmp_entry(20, 20, 32, alpha=False))]
files['icon.ico'] = ico_file(entries)
files['icon-png.ico'] = ico_file([(16, 16, 8, ico_bmp_entry(16, 16, 8)), (64, 64, 32, png_entry(64, 64))])
files['cursor.cur'] = ico_file([(32, 32, 8, ico_bmp_entry(32, 32, 8))], kind=2)

for name, blob in files.items():
    open(name, 'wb').write(blob)

# Pillow's decode of each, at a given icon size where the file holds several.
refs = {name: None for name in files if name not in ('icon.ico', 'icon-png.ico', 'cursor.cur', 'argb32-alphabitfields.bmp')}
unreadable = []
for name in refs:
    try:
        with Image.open(name) as img:
            img.convert('RGBA').save(name.rsplit('.', 1)[0] + '.ref.png')
    except (OSError, ValueError) as e:
        print(name, e)
        unreadable.append(name)
# Layouts Pillow does not read: the reference is the pixels written, computed here.
def expected(name, fn):
    img = Image.new('RGBA', (W, H))
    img.putdata([fn(*p) for p in src])
    img.save(name.rsplit('.', 1)[0] + '.ref.png')
for name in unreadable:
    if name == 'argb4444-v3.bmp':
        expected(name, lambda r, g, b, a: tuple((v >> 4) * 17 for v in (r, g, b, a)))
    elif name == 'rgb101010.bmp':
        expected(name, lambda r, g, b, a: (r, g, b, 255))
    elif name == 'rle8-delta.bmp':
        # Browsers leave skipped pixels transparent (Pillow refuses the file).
        img = Image.new('RGBA', (8, 4), (0, 0, 0, 0))
        for x in range(5):
            img.putpixel((x, 3), pal[1] + (255,))
        for x in range(3, 7):
            img.putpixel((x, 0), pal[2] + (255,))
        img.save('rle8-delta.ref.png')
    else:
        raise SystemExit(f'Pillow cannot read {name} and there is no computed reference')
print('computed references:', unreadable)
for name, size in (('icon.ico', 48), ('icon.ico', 16), ('icon.ico', 32), ('icon.ico', 24), ('icon.ico', 20), ('icon-png.ico', 64), ('icon-png.ico', 16)):
    with Image.open(name) as img:
        img.size = (size, size)
        img.load()
        img.convert('RGBA').save(f"{name.rsplit('.', 1)[0]}-{size}.ref.png")
print('\n'.join(sorted(files)))
