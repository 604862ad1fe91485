"""Records which functions of a release `imago` a start touches, for the linker to
put together (`make startup-order`).

Usage: startup-order.py BINARY ORDER_FILE. Runs the tool the ways a user does (help,
a fetch given an empty list, fetches of the samples over HTTP from 127.0.0.1, full
size and thumbnails) under `perf record -e page-faults`, finds the function at each
address where a page of the binary's code was first read, and appends the ones not
yet in ORDER_FILE to the group of the run that needed them. Then it prints how many
code faults the runs took.

Why: the kernel maps a file's pages 64 KB around each fault, so the few hundred
functions a start runs, scattered through 17 MB of code (the Swift runtime,
Foundation, ICU, Imago), bring in 6-7 MB. Linked in the order of this file
(lld's --symbol-ordering-file) they sit together. The functions of a run that were
already mapped by a neighbour's fault are not seen until the order moves that
neighbour away, so the file grows over a few rounds of link and record.
"""
import bisect
import os
import re
import subprocess
import sys
import tempfile

binary, order_path = sys.argv[1], sys.argv[2]
samples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Samples")


def code_faults(arguments):
    """The addresses, relative to the binary's start, of the code pages first read."""
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "perf.data")
        subprocess.run(["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", data, binary] + arguments,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = subprocess.run(["perf", "script", "-i", data, "--show-mmap-events", "-F", "addr,ip"],
                                capture_output=True, text=True).stdout
    base, end, name, faults = None, None, os.path.realpath(binary), []
    for line in script.splitlines():
        mapping = re.search(r"PERF_RECORD_MMAP2 .*\[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|0) .* (\S+)$", line)
        if mapping:
            if os.path.realpath(mapping.group(4)) == name:
                start, length, offset = (int(mapping.group(i), 16) for i in (1, 2, 3))
                if offset == 0 and base is None:
                    base = start
                if "x" in line.split("]:")[-1].split()[0]:
                    end = start + length  # the code mapping's end
            continue
        fields = line.split()
        if len(fields) >= 2 and fields[0] == fields[1] and re.fullmatch(r"[0-9a-f]+", fields[0]):
            faults.append(int(fields[0], 16))  # an instruction fetch: the address is the pc
    if base is None or end is None:
        return []
    return [address - base for address in faults if base <= address < end]


def functions():
    """The binary's code symbols, sorted by address."""
    listing = subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True).stdout
    symbols = []
    for line in listing.splitlines():
        fields = line.split(" ", 2)
        if len(fields) == 3 and fields[1] in "tTW" and fields[0]:
            symbols.append((int(fields[0], 16), fields[2]))
    return symbols


server = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "serve.py"), samples],
                          stdout=subprocess.PIPE, text=True)
try:
    port = int(server.stdout.readline())
    urls = [f"http://127.0.0.1:{port}/{name}" for name in sorted(os.listdir(samples))
            if name.endswith((".jpg", ".png", ".gif", ".webp"))]
    with tempfile.TemporaryDirectory() as cache:
        # Most wanted first: a process at rest is the figure a start shows.
        runs = {
            "help": ["--help"],
            "fetch, no input": ["fetch", "--input", "-"],
            "fetch over HTTP": ["fetch", "--cache-dir", cache] + urls,
            "fetch of thumbnails": ["fetch", "--no-disk-cache", "--thumbnail", "256"] + urls,
        }
        faults = {run: code_faults(arguments) for run, arguments in runs.items()}
finally:
    server.kill()

# The file keeps a group of functions per run, under a "# run" line (lld skips lines
# that start with #), so that what a later round finds for a run joins its own group.
groups = {run: [] for run in runs}
if os.path.exists(order_path):
    group = None
    with open(order_path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("# "):
                group = groups.setdefault(line[2:], [])
            elif line and group is not None:
                group.append(line)
listed = {name for names in groups.values() for name in names}
symbols = functions()
addresses = [address for address, _ in symbols]
added = 0
for run in runs:
    for address in faults[run]:
        index = bisect.bisect_right(addresses, address) - 1
        if index >= 0 and symbols[index][1] not in listed:
            listed.add(symbols[index][1])
            groups[run].append(symbols[index][1])
            added += 1
with open(order_path + ".tmp", "w") as f:
    for run, names in groups.items():
        f.write(f"# {run}\n" + "".join(name + "\n" for name in names))
os.replace(order_path + ".tmp", order_path)
print(f"{sum(map(len, faults.values()))} code faults in {len(runs)} runs; {added} functions added, {len(listed)} in all")
