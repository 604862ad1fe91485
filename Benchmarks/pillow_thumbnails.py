#!/usr/bin/env python3
"""The Pillow baseline of `imago-bench`: what Python users write to make thumbnails.

    pillow_thumbnails.py DIR [--size 256] [--full] [--runs N] [--memory] [--ext avif]
    pillow_thumbnails.py --at-rest

Reads every *.jpg (or *.EXT) in DIR into memory first, then works on all cores (a thread pool of
os.cpu_count() workers; Pillow releases the GIL while it decodes and resamples):

- by default, 256 px thumbnails the usual way: Image.open, then
  im.draft('RGB', (size, size)) (JPEG DCT scaling) and
  im.thumbnail((size, size), Image.LANCZOS), with thumbnail's own defaults
  (reducing_gap=2.0);
- with --full, a full decode (im.load()) instead.

One untimed pass warms the process up, then each of --runs timed passes prints a line

    seconds=0.953 files=300 workers=2

With --memory the files are read by the workers as they go (not all first), one pass
is made, and the line also gives the process's peak RSS: `peak_rss_kb=51234`. With
--at-rest nothing is decoded: the line gives the peak RSS of Python with Pillow loaded.

The peak RSS is the process's own (VmHWM, on Linux), because what a parent gets from
wait4 counts the parent's memory too when the child was started by posix_spawn.
"""

import argparse
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

from PIL import Image


def thumbnail(data: bytes, size: int) -> Image.Image:
    im = Image.open(BytesIO(data))
    im.draft("RGB", (size, size))
    im.thumbnail((size, size), Image.LANCZOS)
    return im


def full(data: bytes) -> Image.Image:
    im = Image.open(BytesIO(data))
    im.load()
    return im


def peak_rss_kb() -> int:
    """The most memory this process has held since it started (VmHWM on Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def run(items, work, workers: int) -> float:
    """Seconds to apply `work` to every item on `workers` threads."""
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(work, items):
            pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, nargs="?")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--full", action="store_true", help="full decode instead of thumbnails")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--memory", action="store_true", help="read files as they go; report peak RSS")
    parser.add_argument("--at-rest", action="store_true", help="decode nothing; report peak RSS")
    parser.add_argument("--ext", default="jpg", help="the files to take: *.EXT in DIR")
    args = parser.parse_args()

    if args.at_rest:
        print(f"seconds=0 files=0 workers=0 peak_rss_kb={peak_rss_kb()}")
        return
    if args.dir is None:
        parser.error("DIR is needed")

    paths = sorted(args.dir.glob(f"*.{args.ext}"))
    if not paths:
        sys.exit(f"pillow_thumbnails.py: no *.{args.ext} in {args.dir}")
    workers = os.cpu_count() or 1
    decode = full if args.full else (lambda data: thumbnail(data, args.size))

    if args.memory:
        seconds = run(paths, lambda path: decode(path.read_bytes()), workers)
        print(f"seconds={seconds:.6f} files={len(paths)} workers={workers} peak_rss_kb={peak_rss_kb()}")
        return

    photos = [path.read_bytes() for path in paths]
    run(photos, decode, workers)
    for _ in range(args.runs):
        seconds = run(photos, decode, workers)
        print(f"seconds={seconds:.6f} files={len(photos)} workers={workers}", flush=True)


if __name__ == "__main__":
    main()
