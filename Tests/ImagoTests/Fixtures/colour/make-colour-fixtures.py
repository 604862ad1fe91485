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

# AVIF and HEIF with the ProPhoto profile in their colr box, lossless RGB from the
# ProPhoto PNG, so its reference serves them too.
subprocess.run(["avifenc", "-l", f"{out}/prophoto.png", f"{out}/prophoto.avif"], check=True, stdout=subprocess.DEVNULL)
subprocess.run(["heif-enc", "-L", "-p", "chroma=444", "--matrix_coefficients=0", "-o", f"{out}/prophoto.heic",
                f"{out}/prophoto.png"], check=True, stdout=subprocess.DEVNULL)
