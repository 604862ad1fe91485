#!/usr/bin/env python3
"""Writes a HEIF or AVIF grid whose every cell refers to one coded tile of noise, so
an image of many tiles fits in about the size of one:

    make_grid.py heic 256 24 heic/slow/grid.heic   # 6144², seconds of libheif's work
    make_grid.py avif 64 32 avif/slow/many-tiles.avif   # 2048² in 1,024 tiles

The tile is coded by heif-enc (x265) or avifenc (libaom) from Pillow's noise, its
properties (hvcC or av1C, and the encoder's others) copied to every cell. Run from
this folder; the files are committed, so the tests never run this."""
import random, struct, subprocess, sys, tempfile

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

def tile(form, side):
    """The tile's properties other than its size, and its coded data, from the
    encoder's file of one image."""
    from PIL import Image
    with tempfile.TemporaryDirectory() as tmp:
        random.seed(7)
        Image.frombytes("RGB", (side, side), bytes(random.getrandbits(8) for _ in range(side * side * 3))).save(f"{tmp}/tile.png")
        encoder = ["heif-enc", "-q", "50"] if form == "heic" else ["avifenc", "-s", "10", "--min", "20", "--max", "30"]
        subprocess.run(encoder + [f"{tmp}/tile.png", "-o", f"{tmp}/tile.{form}"], check=True, capture_output=True)
        data = open(f"{tmp}/tile.{form}", "rb").read()
    meta = next((s, e) for k, s, e in boxes(data) if k == "meta")
    properties, extent = [], None
    for k, s, e in boxes(data, meta[0] + 12, meta[1]):
        if k == "iprp":
            ipco = next((s2, e2) for k2, s2, e2 in boxes(data, s + 8, e) if k2 == "ipco")
            properties = [(k3, data[s3:e3]) for k3, s3, e3 in boxes(data, ipco[0] + 8, ipco[1]) if k3 != "ispe"]
        if k == "iloc":
            version = data[s + 8]
            sizes = data[s + 12] << 8 | data[s + 13]
            off, length, base = sizes >> 12, sizes >> 8 & 15, sizes >> 4 & 15
            index = sizes & 15 if version in (1, 2) else 0
            wide = 4 if version == 2 else 2
            p = s + 14
            assert int.from_bytes(data[p:p + wide], "big") == 1, "the encoder wrote more than one item"
            p += 2 * wide  # count, item ID
            if version in (1, 2): p += 2  # construction method
            p += 2  # data reference index
            base_offset = int.from_bytes(data[p:p + base], "big"); p += base
            assert struct.unpack(">H", data[p:p + 2])[0] == 1; p += 2
            p += index
            o = int.from_bytes(data[p:p + off], "big"); p += off
            n = int.from_bytes(data[p:p + length], "big")
            extent = data[base_offset + o:base_offset + o + n]
    return properties, extent

def grid(form, side, cells, properties, coded):
    tiles = cells * cells
    ids = list(range(2, tiles + 2))
    size = side * cells
    item = b"hvc1" if form == "heic" else b"av01"
    brands = b"heicmif1heic" if form == "heic" else b"avif" + struct.pack(">I", 0) + b"mif1avifmiaf"
    ftyp = box("ftyp", brands[:4] + struct.pack(">I", 0) + brands[4:] if form == "heic" else brands)
    hdlr = full("hdlr", 0, 0, struct.pack(">I", 0) + b"pict" + bytes(12) + b"\0")
    pitm = full("pitm", 0, 0, struct.pack(">H", 1))
    infe = [full("infe", 2, 0, struct.pack(">HH", 1, 0) + b"grid" + b"\0")]
    infe += [full("infe", 2, 1, struct.pack(">HH", i, 0) + item + b"\0") for i in ids]  # hidden
    iinf = full("iinf", 0, 0, struct.pack(">H", len(infe)) + b"".join(infe))
    iref = full("iref", 0, 0, box("dimg", struct.pack(">HH", 1, tiles) + b"".join(struct.pack(">H", i) for i in ids)))
    ispe = lambda w, h: full("ispe", 0, 0, struct.pack(">II", w, h))
    ipco = box("ipco", b"".join(p for _, p in properties) + ispe(side, side) + ispe(size, size))
    tile_index, grid_index = len(properties) + 1, len(properties) + 2
    # The codec's configuration is essential; the other properties are not.
    marks = [(0x80 if k in ("hvcC", "av1C") else 0) | n + 1 for n, (k, _) in enumerate(properties)] + [tile_index]
    # The grid has its size, and the tiles' pixel information where there is one.
    grid_marks = [grid_index] + [n + 1 for n, (k, _) in enumerate(properties) if k == "pixi"]
    entries = [struct.pack(">HB", 1, len(grid_marks)) + bytes(grid_marks)]
    entries += [struct.pack(">HB", i, len(marks)) + bytes(marks) for i in ids]
    ipma = full("ipma", 0, 0, struct.pack(">I", len(entries)) + b"".join(entries))
    iprp = box("iprp", ipco + ipma)
    grid_data = struct.pack(">BBBBHH", 0, 0, cells - 1, cells - 1, size, size)

    def meta_with(grid_offset, tile_offset):
        items = [struct.pack(">HHHII", 1, 0, 1, grid_offset, len(grid_data))]
        items += [struct.pack(">HHHII", i, 0, 1, tile_offset, len(coded)) for i in ids]
        iloc = full("iloc", 0, 0, struct.pack(">BBH", 0x44, 0x00, len(items)) + b"".join(items))
        return full("meta", 0, 0, hdlr + pitm + iloc + iinf + iref + iprp)

    start = len(ftyp) + len(meta_with(0, 0)) + 8
    return ftyp + meta_with(start, start + len(grid_data)) + box("mdat", grid_data + coded)

form, side, cells, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
properties, coded = tile(form, side)
open(out, "wb").write(grid(form, side, cells, properties, coded))
