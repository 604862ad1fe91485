#!/usr/bin/env python3
"""Writes grid.heic: one 256 × 256 HEVC tile of noise (heif-enc, x265) that every cell
of a 24 × 24 grid refers to, so a 6144 × 6144 image that takes libheif seconds to
decode fits in 70 KB. Run from this folder; the file is committed, so the tests never
run this."""
import random, struct, subprocess, sys, tempfile, os
from PIL import Image

TILE, CELLS = 256, 24

def boxes(data, start=0, end=None):
    end = len(data) if end is None else end
    while start < end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        yield kind.decode(), start, start + size
        start += size

def box(kind, body):
    return struct.pack(">I4s", len(body) + 8, kind.encode()) + body

def full(kind, version, flags, body):
    return box(kind, struct.pack(">I", version << 24 | flags) + body)

def tile():
    """The tile's hvcC box and its coded data, from heif-enc's single image."""
    with tempfile.TemporaryDirectory() as tmp:
        random.seed(7)
        img = Image.frombytes("RGB", (TILE, TILE), bytes(random.getrandbits(8) for _ in range(TILE * TILE * 3)))
        img.save(f"{tmp}/tile.png")
        subprocess.run(["heif-enc", "-q", "50", f"{tmp}/tile.png", "-o", f"{tmp}/tile.heic"], check=True, capture_output=True)
        data = open(f"{tmp}/tile.heic", "rb").read()
    meta = next((s, e) for k, s, e in boxes(data) if k == "meta")
    hvcc = extent = None
    for k, s, e in boxes(data, meta[0] + 12, meta[1]):
        if k == "iprp":
            ipco = next((s2, e2) for k2, s2, e2 in boxes(data, s + 8, e) if k2 == "ipco")
            hvcc = next(data[s3:e3] for k3, s3, e3 in boxes(data, ipco[0] + 8, ipco[1]) if k3 == "hvcC")
        if k == "iloc":
            version = data[s + 8]
            sizes = data[s + 12] << 8 | data[s + 13]
            off, length, base = sizes >> 12, sizes >> 8 & 15, sizes >> 4 & 15
            index = sizes & 15 if version in (1, 2) else 0
            p = s + 14
            count = struct.unpack(">H", data[p:p + 2])[0] if version < 2 else struct.unpack(">I", data[p:p + 4])[0]
            p += 2 if version < 2 else 4
            assert count == 1, "heif-enc wrote more than one item"
            p += 2 if version < 2 else 4  # item ID
            if version in (1, 2): p += 2  # construction method
            p += 2  # data reference index
            base_offset = int.from_bytes(data[p:p + base], "big"); p += base
            assert struct.unpack(">H", data[p:p + 2])[0] == 1; p += 2
            p += index
            o = int.from_bytes(data[p:p + off], "big"); p += off
            n = int.from_bytes(data[p:p + length], "big")
            extent = data[base_offset + o:base_offset + o + n]
    return hvcc, extent

def grid(hvcc, coded):
    tiles = CELLS * CELLS
    ids = list(range(2, tiles + 2))
    side = TILE * CELLS
    grid_data = struct.pack(">BBBBHH", 0, 0, CELLS - 1, CELLS - 1, side, side)
    ftyp = box("ftyp", b"heic" + struct.pack(">I", 0) + b"mif1heic")
    hdlr = full("hdlr", 0, 0, struct.pack(">I", 0) + b"pict" + bytes(12) + b"\0")
    pitm = full("pitm", 0, 0, struct.pack(">H", 1))
    infe = [full("infe", 2, 0, struct.pack(">HH", 1, 0) + b"grid" + b"\0")]
    infe += [full("infe", 2, 1, struct.pack(">HH", i, 0) + b"hvc1" + b"\0") for i in ids]
    iinf = full("iinf", 0, 0, struct.pack(">H", len(infe)) + b"".join(infe))
    iref = full("iref", 0, 0, box("dimg", struct.pack(">HH", 1, tiles) + b"".join(struct.pack(">H", i) for i in ids)))
    ispe = lambda w, h: full("ispe", 0, 0, struct.pack(">II", w, h))
    ipco = box("ipco", hvcc + ispe(TILE, TILE) + ispe(side, side))
    entries = [struct.pack(">HBB", 1, 1, 3)] + [struct.pack(">HBBB", i, 2, 0x80 | 1, 2) for i in ids]
    ipma = full("ipma", 0, 0, struct.pack(">I", len(entries)) + b"".join(entries))
    iprp = box("iprp", ipco + ipma)

    def meta_with(grid_offset, tile_offset):
        items = [struct.pack(">HHHII", 1, 0, 1, grid_offset, len(grid_data))]
        items += [struct.pack(">HHHII", i, 0, 1, tile_offset, len(coded)) for i in ids]
        iloc = full("iloc", 0, 0, struct.pack(">BBH", 0x44, 0x00, len(items)) + b"".join(items))
        return full("meta", 0, 0, hdlr + pitm + iloc + iinf + iref + iprp)

    start = len(ftyp) + len(meta_with(0, 0)) + 8
    mdat = box("mdat", grid_data + coded)
    return ftyp + meta_with(start, start + len(grid_data)) + mdat

hvcc, coded = tile()
out = sys.argv[1] if len(sys.argv) > 1 else "grid.heic"
open(out, "wb").write(grid(hvcc, coded))
