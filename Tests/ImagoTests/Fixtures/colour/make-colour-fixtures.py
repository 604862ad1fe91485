# Makes the colour-management tests' images and their reference conversions with
# Pillow's ImageCms (Little CMS through Pillow), from profiles given on the command
# line. Usage: make-colour-fixtures.py OUTDIR P3.icc CMYK.icc GAMMA18.icc
#
# For each tagged image NAME it writes NAME.<ext> and NAME.ref: the reference sRGB
# conversion of the pixels as Pillow decodes them, raw 8-bit RGB, row by row.
import io
import struct
import sys

from PIL import Image, ImageCms

out, p3_path, cmyk_path, gamma_path = sys.argv[1:5]
COLORD = "/usr/share/color/icc/colord/"
srgb = ImageCms.createProfile("sRGB")
BPC = ImageCms.FLAGS["BLACKPOINTCOMPENSATION"]


def photo(width=96, height=64):
    """Saturated ramps and a neutral ramp: every hue at several lightnesses, and
    the dark end where black point compensation matters."""
    im = Image.new("RGB", (width, height))
    px = im.load()
    for y in range(height):
        for x in range(width):
            if y < 8:
                v = x * 255 // (width - 1)
                px[x, y] = (v, v, v)
                continue
            h = x / width * 6
            i = int(h)
            f = h - i
            v = 255 - (y - 8) * 200 // (height - 8)
            s = 1.0 if y % 2 else 0.45
            p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
            r, g, b = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i % 6]
            px[x, y] = (int(r), int(g), int(b))
    return im


def reference(name, path, profile_path, mode="RGB"):
    im = Image.open(path)
    im.load()
    if im.mode != mode:
        raise SystemExit(f"{path}: {im.mode}, not {mode}")
    converted = ImageCms.profileToProfile(
        im, ImageCms.getOpenProfile(profile_path), srgb, renderingIntent=0, outputMode="RGB", flags=BPC)
    with open(f"{out}/{name}.ref", "wb") as f:
        f.write(converted.tobytes())


def icc(path):
    with open(path, "rb") as f:
        return f.read()


base = photo()
base.save(f"{out}/untagged.png")
base.save(f"{out}/srgb.png", icc_profile=icc(COLORD + "sRGB.icc"))
base.save(f"{out}/untagged.jpg", quality=95, subsampling=0)
base.save(f"{out}/srgb.jpg", quality=95, subsampling=0, icc_profile=icc(COLORD + "sRGB.icc"))
base.save(f"{out}/damaged.jpg", quality=95, subsampling=0, icc_profile=b"\0\0\2\0acsp" * 40)

for name, ext, profile, options in [
    ("p3", "jpg", p3_path, dict(quality=95, subsampling=0)),
    ("adobe", "jpg", COLORD + "AdobeRGB1998.icc", dict(quality=95, subsampling=0)),
    ("prophoto", "png", COLORD + "ProPhotoRGB.icc", {}),
    ("adobe", "webp", COLORD + "AdobeRGB1998.icc", dict(lossless=True)),
    ("prophoto", "tiff", COLORD + "ProPhotoRGB.icc", {}),
]:
    path = f"{out}/{name}.{ext}"
    base.save(path, icc_profile=icc(profile), **options)
    reference(f"{name}-{ext}", path, profile)

# CMYK: Pillow writes Adobe's inverted CMYK, and reads it back as ink.
cmyk = base.convert("CMYK")
cmyk.save(f"{out}/cmyk.jpg", quality=95, icc_profile=icc(cmyk_path))
reference("cmyk-jpg", f"{out}/cmyk.jpg", cmyk_path, mode="CMYK")

# A gamma-only PNG (gAMA 1/1.8, no cHRM): sRGB primaries with a 1.8 curve.
from PIL import PngImagePlugin

info = PngImagePlugin.PngInfo()
info.add(b"gAMA", struct.pack(">I", round(100000 / 1.8)))
base.save(f"{out}/gamma18.png", pnginfo=info)
reference("gamma18-png", f"{out}/gamma18.png", gamma_path)

# cICP: Display P3 primaries (12) with the sRGB curve (13), full-range RGB. Pillow
# 9.4 does not write the chunk, so it goes in after IHDR here.
import zlib

buffer = io.BytesIO()
base.save(buffer, format="PNG")
png = buffer.getvalue()
payload = b"cICP" + bytes([12, 13, 0, 1])
chunk = struct.pack(">I", 4) + payload + struct.pack(">I", zlib.crc32(payload))
with open(f"{out}/cicp.png", "wb") as f:
    f.write(png[:33] + chunk + png[33:])
reference("cicp-png", f"{out}/cicp.png", p3_path)

# HDR: a gray ramp of 16-bit codes 0…65535 (256 steps), as a 16-bit RGB PNG written
# here (Pillow cannot), encoded losslessly as 10-bit RGB (matrix 0) with BT.2020
# primaries and PQ (16) or HLG (18) by avifenc (libavif-bin).
import subprocess


def png16(path, width, height, value):
    rows = b"".join(b"\0" + b"".join(struct.pack(">HHH", *([value(x)] * 3)) for x in range(width)) for _ in range(height))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


png16(f"{out}/ramp16.png", 256, 8, lambda x: x * 257)
for name, transfer in [("pq", 16), ("hlg", 18)]:
    subprocess.run(["avifenc", "-d", "10", "-y", "444", "--min", "0", "--max", "0", "--cicp", f"9/{transfer}/0",
                    f"{out}/ramp16.png", f"{out}/{name}.avif"], check=True, stdout=subprocess.DEVNULL)



# The same ramps as HEIF, lossless 10-bit RGB by heif-enc, which (1.15) writes no colr
# box for HEVC: the nclx box is put in here, as another encoder's file carries it.
def with_nclx(data, primaries, transfer, matrix):
    """The HEIF `data` with a colr box (nclx, full range) given to its primary item:
    appended to ipco, associated in ipma, the boxes around them grown and iloc's file
    offsets moved past the inserted bytes."""
    d = bytearray(data)
    found = {}
    def walk(start, end, path):
        i = start
        while i + 8 <= end:
            size, kind = struct.unpack(">I4s", d[i:i + 8])
            kind = kind.decode("latin1")
            found[kind] = (i, size)
            if kind == "meta":
                walk(i + 12, i + size, path + [kind])
            elif kind in ("iprp", "ipco"):
                walk(i + 8, i + size, path + [kind])
            i += size
    walk(0, len(d), [])
    pitm = found["pitm"][0]
    primary = struct.unpack(">H", d[pitm + 12:pitm + 14])[0] if d[pitm + 8] == 0 else struct.unpack(">I", d[pitm + 12:pitm + 16])[0]
    colr = struct.pack(">I4s4sHHHB", 19, b"colr", b"nclx", primaries, transfer, matrix, 0x80)
    ipco, ipco_size = found["ipco"]
    index = 0  # the new property's index: one past the properties there are
    i = ipco + 8
    while i < ipco + ipco_size:
        index += 1
        i += struct.unpack(">I", d[i:i + 4])[0]
    index += 1
    growth = len(colr) + 1
    # iloc: every extent stored in the file (construction method 0) moves by `growth`.
    iloc, _ = found["iloc"]
    version = d[iloc + 8]
    offset_size, length_size = d[iloc + 12] >> 4, d[iloc + 12] & 15
    base_size, index_size = d[iloc + 13] >> 4, (d[iloc + 13] & 15) if version in (1, 2) else 0
    p = iloc + 14
    def read(n):
        nonlocal p
        value = int.from_bytes(d[p:p + n], "big") if n else 0
        p += n
        return value
    def bump(n):
        # Offsets here point past meta (into mdat), all of which moves.
        if n:
            d[p - n:p] = (int.from_bytes(d[p - n:p], "big") + growth).to_bytes(n, "big")
    count = read(2 if version < 2 else 4)
    for _ in range(count):
        read(2 if version < 2 else 4)
        method = read(2) & 15 if version in (1, 2) else 0
        read(2)
        read(base_size)
        if method == 0 and base_size:
            bump(base_size)
        extents = read(2)
        for _ in range(extents):
            read(index_size)
            read(offset_size)
            if method == 0 and not base_size:
                bump(offset_size)
            read(length_size)
    # ipma: one more (non-essential) association for the primary item.
    ipma, ipma_size = found["ipma"]
    ipma_version, ipma_flags = d[ipma + 8], int.from_bytes(d[ipma + 9:ipma + 12], "big")
    assert ipma_flags & 1 == 0 and index < 128
    p = ipma + 12
    entries = read(4)
    for _ in range(entries):
        item = read(2 if ipma_version < 1 else 4)
        n = read(1)
        if item == primary:
            d[p - 1] = n + 1
            d[p + n:p + n] = bytes([index])
            break
        p += n
    else:
        raise ValueError("the primary item has no properties")
    for kind in ("meta", "iprp", "ipco", "ipma"):
        at, size = found[kind]
        d[at:at + 4] = struct.pack(">I", size + (1 if kind == "ipma" else growth if kind != "ipco" else len(colr)))
    d[ipco + ipco_size:ipco + ipco_size] = colr
    return bytes(d)


subprocess.run(["heif-enc", "-L", "-b", "10", "-p", "chroma=444", "--matrix_coefficients=0", "-o", f"{out}/ramp.heic",
                f"{out}/ramp16.png"], check=True, stdout=subprocess.DEVNULL)
with open(f"{out}/ramp.heic", "rb") as f:
    ramp = f.read()
for name, transfer in [("pq", 16), ("hlg", 18)]:
    with open(f"{out}/{name}.heic", "wb") as f:
        f.write(with_nclx(ramp, 9, transfer, 0))

# AVIF and HEIF with the ProPhoto profile in their colr box, lossless RGB from the
# ProPhoto PNG, so its reference serves them too.
subprocess.run(["avifenc", "-l", f"{out}/prophoto.png", f"{out}/prophoto.avif"], check=True, stdout=subprocess.DEVNULL)
subprocess.run(["heif-enc", "-L", "-p", "chroma=444", "--matrix_coefficients=0", "-o", f"{out}/prophoto.heic",
                f"{out}/prophoto.png"], check=True, stdout=subprocess.DEVNULL)

# Straight alpha: the ProPhoto photo with alphas from 8 to 255 across, in every format
# whose codec hands over straight alpha. The reference NAME.ref is raw RGBA: the
# straight colour converted by Little CMS, with the alpha it had.
ALPHAS = [8, 30, 60, 100, 139, 172, 205, 230, 248, 255]
alpha = Image.frombytes("L", base.size, bytes(ALPHAS[x % len(ALPHAS)] for y in range(base.height) for x in range(base.width)))
translucent = base.copy()
translucent.putalpha(alpha)
prophoto = COLORD + "ProPhotoRGB.icc"
translucent.save(f"{out}/prophoto-alpha.png", icc_profile=icc(prophoto))
translucent.save(f"{out}/prophoto-alpha.webp", lossless=True, exact=True, icc_profile=icc(prophoto))
converted = ImageCms.profileToProfile(
    base, ImageCms.getOpenProfile(prophoto), srgb, renderingIntent=0, outputMode="RGB", flags=BPC)
converted.putalpha(alpha)
with open(f"{out}/prophoto-alpha.ref", "wb") as f:
    f.write(converted.tobytes())
subprocess.run(["avifenc", "-l", f"{out}/prophoto-alpha.png", f"{out}/prophoto-alpha.avif"], check=True, stdout=subprocess.DEVNULL)
subprocess.run(["heif-enc", "-L", "-p", "chroma=444", "--matrix_coefficients=0", "-o", f"{out}/prophoto-alpha.heic",
                f"{out}/prophoto-alpha.png"], check=True, stdout=subprocess.DEVNULL)
subprocess.run(["cjxl", f"{out}/prophoto-alpha.png", f"{out}/prophoto-alpha.jxl", "-d", "0"], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# An animation of it, then of it turned upside down: each canvas is a frame as given.
flipped = translucent.transpose(Image.FLIP_TOP_BOTTOM)
translucent.save(f"{out}/prophoto-alpha-animated.webp", save_all=True, append_images=[flipped], duration=100, loop=0,
                 lossless=True, exact=True, icc_profile=icc(prophoto))
with open(f"{out}/prophoto-alpha-flipped.ref", "wb") as f:
    f.write(converted.transpose(Image.FLIP_TOP_BOTTOM).tobytes())
# heif-enc's lossless RGB is a level off here and there, which near the edge of sRGB's
# gamut is many levels once converted: its reference is made from libheif's own
# decode (heif-convert, libheif-examples).
subprocess.run(["heif-convert", f"{out}/prophoto-alpha.heic", f"{out}/prophoto-alpha-heic.png"], check=True,
               stdout=subprocess.DEVNULL)
decoded = Image.open(f"{out}/prophoto-alpha-heic.png").convert("RGBA")
converted = ImageCms.profileToProfile(
    decoded.convert("RGB"), ImageCms.getOpenProfile(prophoto), srgb, renderingIntent=0, outputMode="RGB", flags=BPC)
converted.putalpha(decoded.getchannel("A"))
with open(f"{out}/prophoto-alpha-heic.ref", "wb") as f:
    f.write(converted.tobytes())
