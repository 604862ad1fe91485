"""The peer of `imago fetch` in the end-to-end benchmark: the same work in Python.

    aiohttp_pillow.py --input URLS [--concurrency 8] [--thumbnail PX]

Loads every URL of the file with aiohttp (at most --concurrency transfers at once,
connections kept per origin up to that number), decodes each body with Pillow on a
thread per core (Pillow's decoders release the GIL), to full size or, with
--thumbnail, through `draft` (libjpeg's DCT scaling) and `thumbnail` to fit PX × PX.
Nothing is kept once decoded. Prints `items=N failed=N peak_mb=X` at the end.
"""
import argparse
import asyncio
import io
import os
import resource
import sys
from concurrent.futures import ThreadPoolExecutor

import aiohttp
from PIL import Image


def decode(body, thumbnail):
    image = Image.open(io.BytesIO(body))
    if thumbnail:
        image.draft("RGB", (thumbnail, thumbnail))
        image.thumbnail((thumbnail, thumbnail))
    else:
        image.load()
    return image.size


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--thumbnail", type=int, default=0)
    args = parser.parse_args()
    with open(args.input) as f:
        urls = [line.strip() for line in f if line.strip() and not line.startswith("#")]

    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=os.cpu_count())
    slots = asyncio.Semaphore(args.concurrency)
    failed = 0
    connector = aiohttp.TCPConnector(limit=args.concurrency, limit_per_host=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def load(url):
            nonlocal failed
            try:
                async with slots:
                    async with session.get(url) as response:
                        response.raise_for_status()
                        body = await response.read()
                await loop.run_in_executor(pool, decode, body, args.thumbnail)
            except Exception as error:  # noqa: BLE001 - every failure counts the same
                failed += 1
                print(f"{url}: {error}", file=sys.stderr)

        # Streamed in windows, as imago does, so that memory follows the concurrency.
        window = args.concurrency * 2 + (os.cpu_count() or 1)
        pending = set()
        for url in urls:
            if len(pending) >= window:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending.add(asyncio.ensure_future(load(url)))
        if pending:
            await asyncio.wait(pending)
    pool.shutdown()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"items={len(urls)} failed={failed} peak_mb={peak:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
