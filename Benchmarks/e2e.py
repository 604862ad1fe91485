"""End-to-end benchmark of `imago fetch` for `make bench`: cold loads over HTTP from
nginx on 127.0.0.1 against a Python aiohttp + Pillow peer doing the same work, and
against the limit of this machine (TurboJPEG decoding the same files on every core,
plus `curl --parallel` moving the same bytes), measured in the same rounds.

    e2e.py --imago BIN --tj-decode BIN --photos DIR [--rounds 5] [--work DIR] [--loader NAME]

--loader passes `--loader NAME` to every imago run (curl or urlsession; default: the
tool's own default). Each round also runs the thumbnails and the many-origin fetch
with both HTTP clients, for the rows that compare them.

The warm rows read 300 thumbnails back from a disk cache that a cold run filled:
once with the originals fresh (served with `Cache-Control: max-age=3600`), and once
with every original to be revalidated (`no-cache`, nginx's ETag), so that each load
asks nginx and gets a 304.

Every figure is a whole process's wall time, the median of --rounds rounds, with
imago and its peers run back to back in each round so that a busy machine slows
them alike. Each line names its goal and says whether it was met.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CONCURRENCY = 8
THUMBNAIL = 256
PORTS = 8  # the many-origin row: one nginx, eight ports on 127.0.0.1


def run(command, **kwargs):
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"benchmark step failed ({done.returncode}): {' '.join(command[:4])} …\n{done.stderr[-2000:]}")
    return seconds, done.stdout


def free_base_port(start, count=PORTS):
    """The first port from `start` (in steps of `count`) where `count` ports in a row
    are free on 127.0.0.1, so that a server left running, or another user's, does not
    stop the benchmark."""
    for base in range(start, 65535 - count, count):
        try:
            for port in range(base, base + count):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    sys.exit(f"no {count} free ports in a row on 127.0.0.1 from {start}")


# Under these prefixes the first port serves the same photos with a freshness of
# its own: an hour, or none (every load revalidates; nginx answers a 304 by ETag).
FRESH, NO_CACHE = "/fresh/", "/no-cache/"


def start_nginx(root, work, base_port):
    conf = os.path.join(work, "nginx.conf")
    prefixes = (f"location {FRESH} {{ alias {root}/; add_header Cache-Control \"max-age=3600\"; }} "
                f"location {NO_CACHE} {{ alias {root}/; add_header Cache-Control \"no-cache\"; }}")
    servers = "\n".join(
        f"    server {{ listen 127.0.0.1:{base_port + i}; root {root}; {prefixes if i == 0 else ''} }}" for i in range(PORTS))
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon on;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
{servers}
}}
""")
    subprocess.run(["nginx", "-c", conf, "-p", work], check=True)
    for _ in range(50):
        if os.path.exists(f"{work}/nginx.pid"):
            return
        time.sleep(0.1)
    sys.exit("nginx did not start")


def stop_nginx(work):
    try:
        with open(f"{work}/nginx.pid") as f:
            os.kill(int(f.read().strip()), signal.SIGQUIT)
    except (OSError, ValueError):
        pass


def write_list(path, urls):
    with open(path, "w") as f:
        f.write("\n".join(urls) + "\n")
    return path


LOADER = None  # --loader for every imago run; None for the tool's default
LOADERS = ["curl", "urlsession"]


def imago_fetch(imago, urls, thumbnail=False, cache=None, loader=None):
    command = [imago, "fetch", "--json", "--concurrency", str(CONCURRENCY), "--input", urls]
    if loader or LOADER:
        command += ["--loader", loader or LOADER]
    command += ["--cache-dir", cache] if cache else ["--no-disk-cache"]
    if thumbnail:
        command += ["--thumbnail", str(THUMBNAIL)]
    seconds, out = run(command)
    lines = out.splitlines()
    records = [json.loads(line) for line in lines[:-1]]
    return seconds, records, json.loads(lines[-1])["summary"]


def python_fetch(urls, thumbnail=False):
    command = [sys.executable, os.path.join(os.path.dirname(__file__), "aiohttp_pillow.py"),
               "--input", urls, "--concurrency", str(CONCURRENCY)]
    if thumbnail:
        command += ["--thumbnail", str(THUMBNAIL)]
    seconds, out = run(command)
    values = dict(item.split("=") for item in out.split())
    return seconds, float(values["peak_mb"])


def limit(tj_decode, photos, urls, thumbnail=False):
    """curl moving the bytes at the same concurrency, plus TurboJPEG decoding them."""
    transfer, _ = curl(urls)
    command = [tj_decode, "--runs", "1"] + (["--max-side", str(THUMBNAIL)] if thumbnail else []) + [photos]
    _, out = run(command)
    decode = float(dict(item.split("=") for item in out.split())["seconds"])
    return transfer + decode


def curl(urls):
    config = urls + ".curl"
    with open(urls) as f, open(config, "w") as out:
        for url in f.read().split():
            out.write(f'url = "{url}"\noutput = "/dev/null"\n')
    return run(["curl", "--silent", "--fail", "--parallel", "--parallel-max", str(CONCURRENCY), "--config", config])


def median(values):
    return statistics.median(values)


def verdict(met):
    return "met" if met else "NOT met"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--imago", required=True)
    parser.add_argument("--tj-decode", required=True)
    parser.add_argument("--photos", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", default=None)
    parser.add_argument("--port", type=int, default=None,
                        help="first of the ports nginx listens on (default: the first free ones from 18700)")
    parser.add_argument("--loader", choices=LOADERS, default=None)
    args = parser.parse_args()
    global LOADER
    LOADER = args.loader
    photos = os.path.abspath(args.photos)
    names = sorted(n for n in os.listdir(photos) if n.endswith(".jpg"))
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="imago-e2e-"))
    os.makedirs(work, exist_ok=True)
    args.port = args.port or free_base_port(18700)
    start_nginx(photos, work, args.port)
    try:
        base = f"http://127.0.0.1:{args.port}"
        one = write_list(f"{work}/300.txt", [f"{base}/{n}" for n in names])
        many = write_list(f"{work}/3000.txt", [f"{base}/{n}?r={r}" for r in range(10) for n in names])
        fresh = write_list(f"{work}/fresh.txt", [f"{base}{FRESH}{n}" for n in names])
        no_cache = write_list(f"{work}/no-cache.txt", [f"{base}{NO_CACHE}{n}" for n in names])
        origins = write_list(f"{work}/origins.txt",
                             [f"http://127.0.0.1:{args.port + i % PORTS}/{n}" for i, n in enumerate(names)])
        size = sum(os.path.getsize(os.path.join(photos, n)) for n in names)
        print(f"End to end: {len(names)} JPEGs ({size / 1e6:.1f} MB) from nginx on 127.0.0.1, concurrency {CONCURRENCY}, "
              f"{os.cpu_count()} cores, median of {args.rounds} rounds, whole-process wall times; "
              f"load average {os.getloadavg()[0]:.2f} at the start; HTTP client: {LOADER or 'the tool default'}")
        rows = {key: [] for key in ["full", "full_py", "full_limit", "thumb", "thumb_py", "thumb_limit",
                                    "s300", "s3000", "cold", "warm", "origins", "warm_fresh", "warm_304"]
                + [f"{kind}_{name}" for kind in ["thumb", "origins"] for name in LOADERS]}
        transfer = {name: [] for name in LOADERS}
        peaks = {"s300": [], "s3000": [], "s300_disk": [], "s3000_disk": [], "full_py": []}
        sources = {"warm_fresh": set(), "warm_304": set()}
        stages = None
        for _ in range(args.rounds):
            seconds, records, summary = imago_fetch(args.imago, one)
            rows["full"].append(seconds)
            py, peak = python_fetch(one)
            rows["full_py"].append(py)
            peaks["full_py"].append(peak)
            rows["full_limit"].append(limit(args.tj_decode, photos, one))
            rows["thumb"].append(imago_fetch(args.imago, one, thumbnail=True)[0])
            rows["thumb_py"].append(python_fetch(one, thumbnail=True)[0])
            rows["thumb_limit"].append(limit(args.tj_decode, photos, one, thumbnail=True))
            seconds, _, summary = imago_fetch(args.imago, one)
            rows["s300"].append(seconds / len(names))
            peaks["s300"].append(summary["peakMemory"] / 1e6)
            seconds, big, summary = imago_fetch(args.imago, many)
            rows["s3000"].append(seconds / (10 * len(names)))
            peaks["s3000"].append(summary["peakMemory"] / 1e6)
            stages = big
            cache = f"{work}/cache"
            # The same 3,000 with the disk tier on, as the tool runs by default: its
            # writes must keep up with the loads, or the bodies wait in memory.
            for key, urls in [("s300_disk", one), ("s3000_disk", many)]:
                shutil.rmtree(cache, ignore_errors=True)
                peaks[key].append(imago_fetch(args.imago, urls, cache=cache)[2]["peakMemory"] / 1e6)
            shutil.rmtree(cache, ignore_errors=True)
            rows["cold"].append(imago_fetch(args.imago, one, thumbnail=True, cache=cache)[0])
            rows["warm"].append(imago_fetch(args.imago, one, thumbnail=True, cache=cache)[0])
            rows["origins"].append(imago_fetch(args.imago, origins)[0])
            for key, urls in [("warm_fresh", fresh), ("warm_304", no_cache)]:
                shutil.rmtree(cache, ignore_errors=True)
                imago_fetch(args.imago, urls, thumbnail=True, cache=cache)
                seconds, records, _ = imago_fetch(args.imago, urls, thumbnail=True, cache=cache)
                rows[key].append(seconds)
                sources[key] |= {r.get("source") for r in records}
            for name in LOADERS:
                seconds, records, _ = imago_fetch(args.imago, one, thumbnail=True, loader=name)
                rows[f"thumb_{name}"].append(seconds)
                ok = [r["metrics"]["transfer"] for r in records if r.get("metrics")]
                transfer[name].append(sum(ok) / max(1, len(ok)))
                rows[f"origins_{name}"].append(imago_fetch(args.imago, origins, loader=name)[0])
        m = {key: median(values) for key, values in rows.items()}
        print()
        print(f"{'measure':44}{'imago':>10}{'peer':>24}{'ratio':>9}   goal")
        full_py, full_limit = m["full"] / m["full_py"], m["full"] / m["full_limit"]
        print(f"{'300 full decodes':44}{m['full']:9.2f}s{'Python ' + format(m['full_py'], '.2f') + ' s':>24}{full_py:8.2f}×   "
              f"≤ 0.8× Python: {verdict(full_py <= 0.8)}")
        print(f"{'300 full decodes':44}{m['full']:9.2f}s{'limit ' + format(m['full_limit'], '.2f') + ' s':>24}{full_limit:8.2f}×   "
              f"≤ 1.1× limit: {verdict(full_limit <= 1.1)}")
        thumb_py, thumb_limit = m["thumb_py"] / m["thumb"], m["thumb"] / m["thumb_limit"]
        print(f"{'300 thumbnails (256 px)':44}{m['thumb']:9.2f}s{'Python ' + format(m['thumb_py'], '.2f') + ' s':>24}"
              f"{thumb_py:8.2f}×   ≥ 2.5× faster than Python: {verdict(thumb_py >= 2.5)}")
        print(f"{'300 thumbnails (256 px)':44}{m['thumb']:9.2f}s{'limit ' + format(m['thumb_limit'], '.2f') + ' s':>24}"
              f"{thumb_limit:8.2f}×   ≤ 1.1× limit: {verdict(thumb_limit <= 1.1)}")
        scale = m["s3000"] / m["s300"]
        print(f"{'time per image, 3,000 against 300':44}{m['s3000'] * 1e3:8.2f}ms{format(m['s300'] * 1e3, '.2f') + ' ms':>24}"
              f"{scale:8.2f}×   ≤ 1.1×: {verdict(scale <= 1.1)}")
        p300, p3000 = median(peaks["s300"]), median(peaks["s3000"])
        print(f"{'peak RSS, 3,000 against 300 full decodes':44}{p3000:8.0f}MB{format(p300, '.0f') + ' MB':>24}"
              f"{p3000 / p300:8.2f}×   flat (≤ 1.1×), ≤ 150 MB: {verdict(p3000 / p300 <= 1.1 and p3000 <= 150)}")
        p300_disk, p3000_disk = median(peaks["s300_disk"]), median(peaks["s3000_disk"])
        print(f"{'peak RSS, 3,000 against 300, disk tier on':44}{p3000_disk:8.0f}MB{format(p300_disk, '.0f') + ' MB':>24}"
              f"{p3000_disk / p300_disk:8.2f}×   flat (≤ 1.1×): {verdict(p3000_disk / p300_disk <= 1.1)}")
        print(f"{'peak RSS, 300 full decodes':44}{p300:8.0f}MB{'Python ' + format(median(peaks['full_py']), '.0f') + ' MB':>24}"
              f"{p300 / median(peaks['full_py']):8.2f}×   ≤ Python: {verdict(p300 <= median(peaks['full_py']))}")
        warm = m["cold"] / m["warm"]
        print(f"{'300 thumbnails, warm disk against cold':44}{m['warm']:9.2f}s{'cold ' + format(m['cold'], '.2f') + ' s':>24}"
              f"{warm:8.2f}×   ≥ 5× faster: {verdict(warm >= 5)}")
        revalidated = m["warm_304"] / m["warm_fresh"]
        print(f"{'300 thumbnails, warm, every original a 304':44}{m['warm_304']:9.2f}s"
              f"{'fresh ' + format(m['warm_fresh'], '.2f') + ' s':>24}{revalidated:8.2f}×   ≤ 1.5× fresh: "
              f"{verdict(revalidated <= 1.5)} (answered by: {', '.join(sorted(map(str, sources['warm_304'])))} "
              f"against {', '.join(sorted(map(str, sources['warm_fresh'])))})")
        print(f"{'300 full decodes from {} origins (ports)'.format(PORTS):44}{m['origins']:9.2f}s"
              f"{'one origin ' + format(m['full'], '.2f') + ' s':>24}{m['origins'] / m['full']:8.2f}×")
        a, b = LOADERS
        print(f"{'300 thumbnails, ' + a + ' against ' + b + ' HTTP client':44}{m['thumb_' + a]:9.2f}s"
              f"{b + ' ' + format(m['thumb_' + b], '.2f') + ' s':>24}{m['thumb_' + a] / m['thumb_' + b]:8.2f}×   "
              f"transfer a load {median(transfer[a]) * 1e3:.2f} against {median(transfer[b]) * 1e3:.2f} ms")
        print(f"{'300 full decodes, {} origins, {} against {}'.format(PORTS, a, b):44}{m['origins_' + a]:9.2f}s"
              f"{b + ' ' + format(m['origins_' + b], '.2f') + ' s':>24}{m['origins_' + a] / m['origins_' + b]:8.2f}×")
        if stages:
            ok = [r["metrics"] for r in stages if r.get("metrics")]
            total = {k: sum(r[k] for r in ok) for k in ["queued", "transfer", "decode", "processing"]}
            print()
            print(f"per-stage time of the last 3,000-image run, summed over its {len(ok)} loads "
                  f"(seconds of work, so more than the wall time at concurrency {CONCURRENCY}):")
            print("  " + "   ".join(f"{k} {v:.2f} s ({v / len(ok) * 1e3:.2f} ms a load)" for k, v in total.items()))
    finally:
        stop_nginx(work)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
