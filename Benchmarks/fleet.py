"""The shared tier's benchmark for `make bench-redis` (part of `make bench`): a fleet of
`imago fetch` processes making 256 px thumbnails of 300 photos served by nginx on
127.0.0.1, with and without one Redis on 127.0.0.1, side by side in each round.

    fleet.py --imago BIN --photos DIR [--rounds 5] [--work DIR]

Measures, each the median of --rounds rounds (Redis emptied at each round's start):
  - origin requests of 4 processes started together, cold, each with an empty disk
    cache of its own, with the shared tier and without it (with the Redis commands
    that failed: past the 50 ms timeout, a load asks the origin without a lease);
  - a new process with an empty disk cache, its 300 thumbnails answered by the shared
    tier, against the same cold from the origin without a shared tier;
  - the same with Redis hung (SIGSTOP), with the tier's default 50 ms timeouts,
    against the time without any shared tier.
Every time is a whole process's wall time; a ratio is the median of the rounds'
ratios. Each line names its goal and says whether it was met.
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

from e2e import FRESH, free_base_port, run, start_nginx, stop_nginx, write_list

CONCURRENCY = 8
THUMBNAIL = 256
PROCESSES = 4


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(work):
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", work, "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True, text=True).stdout.strip() == "PONG":
            return server, port
        time.sleep(0.05)
    server.kill()
    sys.exit("redis-server did not start")


def fetch_command(imago, urls, cache, redis=None):
    command = [imago, "fetch", "--json", "--concurrency", str(CONCURRENCY), "--thumbnail", str(THUMBNAIL),
               "--input", urls, "--cache-dir", cache]
    if redis:
        command += ["--redis", redis]
    return command


def summary(out):
    summary = json.loads(out.splitlines()[-1])["summary"]
    failed = summary["failed"]
    if failed:
        sys.exit(f"{failed} loads failed")
    return summary


def fleet(imago, urls, work, name, redis=None):
    """PROCESSES fetches started together; their origin requests (transfers) and
    where their images came from."""
    processes = [subprocess.Popen(fetch_command(imago, urls, os.path.join(work, f"{name}-{i}"), redis),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(PROCESSES)]
    transfers, failures = 0, 0
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            sys.exit(f"imago fetch failed ({process.returncode}): {err[-2000:]}")
        result = summary(out)
        transfers += result["transfers"]
        failures += result.get("shared", {}).get("failures", 0)
    return transfers, failures


def single(imago, urls, cache, redis=None):
    # The steps before wrote hundreds of megabytes; their writeback would run
    # during the timed process and charge it for them.
    os.sync()
    seconds, out = run(fetch_command(imago, urls, cache, redis))
    return seconds, summary(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imago", required=True)
    parser.add_argument("--photos", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work")
    args = parser.parse_args()

    photos = sorted(f for f in os.listdir(args.photos) if f.endswith(".jpg"))[:300]
    work = args.work or tempfile.mkdtemp(prefix="imago-fleet-")
    os.makedirs(work, exist_ok=True)
    base = free_base_port(19100)
    start_nginx(os.path.abspath(args.photos), work, base)
    redis_server, redis_port = start_redis(work)
    redis = f"redis://127.0.0.1:{redis_port}"
    urls = write_list(os.path.join(work, "urls.txt"), [f"http://127.0.0.1:{base}{FRESH}{name}" for name in photos])
    m = {key: [] for key in ["with", "without", "failures", "shared", "cold", "hung"]}
    try:
        for round_ in range(args.rounds):
            subprocess.run(["redis-cli", "-p", str(redis_port), "FLUSHALL"], check=True, capture_output=True)
            caches = os.path.join(work, f"round-{round_}")
            with_tier, failures = fleet(args.imago, urls, caches, "fleet", redis)
            without_tier, _ = fleet(args.imago, urls, caches, "alone")
            m["with"].append(with_tier)
            m["failures"].append(failures)
            m["without"].append(without_tier)
            # One process each, back to back, on empty disk caches.
            seconds, result = single(args.imago, urls, os.path.join(caches, "shared"), redis)
            if result["hits"].get("shared") != len(photos):
                sys.exit(f"the shared tier answered {result['hits']} of {len(photos)}")
            m["shared"].append(seconds)
            m["cold"].append(single(args.imago, urls, os.path.join(caches, "cold"))[0])
            redis_server.send_signal(signal.SIGSTOP)
            try:
                m["hung"].append(single(args.imago, urls, os.path.join(caches, "hung"), redis)[0])
            finally:
                redis_server.send_signal(signal.SIGCONT)
            shutil.rmtree(caches, ignore_errors=True)

        median = {key: statistics.median(values) for key, values in m.items()}
        def verdict(met):
            return "met" if met else "NOT met"
        print(f"{'measure':64}{'imago':>12}{'baseline':>16}{'ratio':>9}   goal")
        print(f"{'4 processes × 300 thumbnails, cold: origin requests':64}{median['with']:12.0f}"
              f"{format(median['without'], '.0f') + ' alone':>16}{'':>9}   = {len(photos)} "
              f"(without: {PROCESSES * len(photos)}): {verdict(max(m['with']) == len(photos))}"
              f" (rounds: {', '.join(str(v) for v in m['with'])}; Redis commands that failed, timed out"
              f" at 50 ms on this machine's load: {', '.join(str(v) for v in m['failures'])})")
        print(f"{'load average during the run':64}{os.getloadavg()[0]:12.2f}")
        # The ratios of each round's runs, made back to back, then their median: on
        # a machine whose load drifts, a ratio of medians pairs runs from different
        # moments.
        speedup = statistics.median(c / s for c, s in zip(m["cold"], m["shared"]))
        slowdown = statistics.median(h / c for h, c in zip(m["hung"], m["cold"]))
        print(f"{'new process, empty disk, 300 thumbnails from the shared tier':64}{median['shared']:11.2f}s"
              f"{format(median['cold'], '.2f') + ' s cold':>16}{speedup:8.2f}×   ≥ 5 × faster than cold: {verdict(speedup >= 5)}")
        print(f"{'the same with Redis hung (SIGSTOP)':64}{median['hung']:11.2f}s"
              f"{format(median['cold'], '.2f') + ' s no tier':>16}{slowdown:8.2f}×   ≤ 1.2 × without a shared tier: {verdict(slowdown <= 1.2)}")
    finally:
        redis_server.send_signal(signal.SIGCONT)
        redis_server.kill()
        redis_server.wait()
        stop_nginx(work)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
