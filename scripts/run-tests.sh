#!/usr/bin/env bash
# Runs the built test suite for `make test`, then says how many tests were skipped
# and why: Swift Testing reports each skip on a line of its own, easy to miss among
# hundreds. XCTest is left out: the suite has no XCTest cases, and its runner would
# only print an empty "Executed 0 tests" block first.
#
# Usage: scripts/run-tests.sh [SWIFT] [swift test options...]
set -o pipefail
swift="${1:-swift}"
shift || true
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# At most eight test cases at once. Started all together, the suite's CPU-bound cases
# (corpus decodes, encoders' round trips) hold both threads of a 2-core machine's
# concurrency pool for over a minute, and the loads of every other test wait behind
# them past their hang guards; eight keep the run as short and let the loads through.
"$swift" test --skip-build --disable-xctest --experimental-maximum-parallelization-width 8 "$@" 2>&1 | tee "$log"
status=$?
# Skips look like: ➜ Test name() skipped: "reason" (colours removed first).
sed -e 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^[^ ]+ Test .* skipped(: ".*")?$' \
  | sed -E 's/^[^ ]+ Test (.*) skipped(: "(.*)")?$/\3\t\1/' | sort > "$log.skips"
count=$(wc -l < "$log.skips")
if [ "$count" -eq 0 ]; then
  echo "==> No tests skipped"
else
  echo "==> $count test(s) skipped:"
  awk -F '\t' '{ reason = ($1 == "" ? "no reason given" : $1); names[reason] = names[reason] (names[reason] == "" ? "" : ", ") $2; n[reason]++ }
    END { for (r in n) printf "    %d: %s (%s)\n", n[r], r, names[r] }' "$log.skips"
fi
rm -f "$log.skips"
exit $status
