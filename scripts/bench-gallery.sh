#!/bin/sh
# The gallery's figures (`make bench-gallery`): imago-gallery --benchmark in a
# 900×640 window of 160-point cells under Xvfb with the Cairo renderer, over 104
# JPEG photos of 2000 to 4000 px made from the shared corpus, served under
# distinct URLs by scripts/gallery-bench.py on 127.0.0.1. Each run has a disk cache
# of its own (XDG_CACHE_HOME), fresh unless it is the warm relaunch. The
# library-defaults run is the grid as a program embedding it with no tuning gets it
# (imago-gallery --library-defaults). BENCH_GALLERY_ONLY=NAME runs only that case
# (520, 5200, 1040-missing, 2080, 520-scale2, 5200-library-defaults).
# BENCH_GALLERY_BUSY=1 runs one CPU-bound process beside the gallery in each case,
# started before it and stopped after, so the frame gaps are those of a machine with
# one core taken by something else, whatever else the machine is doing.
set -e
gallery=$1; corpus=$2
[ -d "$corpus/photos/kodak" ] || { echo "bench-gallery: the shared corpus is missing ($corpus/photos/kodak)"; exit 1; }
# Absolute: a relative XDG_CACHE_HOME is ignored, as the XDG specification says.
mkdir -p "$3"; out=$(cd "$3" && pwd)
python3 scripts/gallery-bench.py photos "$corpus/photos/kodak" "$out/photos" 104
rm -f "$out/port"
python3 scripts/gallery-bench.py serve "$out/photos" "$out/port" & server=$!
busy=""
trap 'kill $server; [ -z "$busy" ] || kill "$busy"' EXIT
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do [ -s "$out/port" ] && break; sleep 0.2; done
base="http://127.0.0.1:$(head -n 1 "$out/port")"

urls() { # COUNT [MISSING_EVERY]
  n=0; while [ $n -lt "$1" ]; do
    if [ -n "$2" ] && [ $((n % $2)) -eq 3 ]; then echo "$base/missing/$n.jpg"; else echo "$base/p/$n.jpg"; fi
    n=$((n + 1)); done
}
requests() { curl -s "$base/requests"; }
run() { # NAME COUNT PASSES CACHE [ENV...] [-- GALLERY OPTIONS...]
  name=$1; count=$2; passes=$3; cache=$4; shift 4
  env=""; while [ $# -gt 0 ] && [ "$1" != "--" ]; do env="$env $1"; shift; done
  [ "$1" = "--" ] && shift
  curl -s -X POST "$base/reset"
  busy=""
  if [ "${BENCH_GALLERY_BUSY:-0}" != 0 ]; then
    python3 -c 'while True: pass' & busy=$!
    echo "==> $name, with one CPU-bound process beside it (pid $busy)"
  else
    echo "==> $name"
  fi
  echo "   before: $(uptime | sed 's/^ *//')"
  # $env is a list of NAME=VALUE words without spaces.
  # shellcheck disable=SC2086
  xvfb-run -a env GSK_RENDERER=cairo XDG_CACHE_HOME="$cache" $env "$gallery" --size 160 --benchmark "$passes" \
    --input "$out/urls-$name.txt" "$@" 2>&1 | grep '^benchmark' | sed 's/^benchmark: /   /'
  echo "   after: $(uptime | sed 's/^ *//')"
  [ -z "$busy" ] || { kill "$busy"; busy=""; }
  echo "   requests: $(requests) for $count URLs"
}
want() { [ -z "$BENCH_GALLERY_ONLY" ] || [ "$BENCH_GALLERY_ONLY" = "$1" ]; }

for count in 520 5200; do
  want $count || continue
  urls $count > "$out/urls-$count.txt"; rm -rf "$out/cache-$count"
  run $count $count 1 "$out/cache-$count"
done
if want 1040-missing; then
  urls 1040 8 > "$out/urls-1040-missing.txt"; rm -rf "$out/cache-missing"
  run 1040-missing 1040 2 "$out/cache-missing"
fi
if want 2080; then
  urls 2080 > "$out/urls-2080.txt"; rm -rf "$out/cache-2080"
  run 2080 2080 1 "$out/cache-2080"
  echo "==> warm relaunch of the same 2080 URLs over the disk cache the run above left"
  run 2080 2080 1 "$out/cache-2080"
fi
if want 520-scale2; then
  urls 520 > "$out/urls-520-scale2.txt"; rm -rf "$out/cache-scale2"
  run 520-scale2 520 1 "$out/cache-scale2" GDK_SCALE=2
fi
if want 5200-library-defaults; then
  urls 5200 > "$out/urls-5200-library-defaults.txt"; rm -rf "$out/cache-defaults"
  run 5200-library-defaults 5200 1 "$out/cache-defaults" -- --library-defaults
fi
