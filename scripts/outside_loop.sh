#!/usr/bin/env bash
# Alternating `stampede run --out` of two binaries, timing the part of the process outside
# the simulator's loop: the whole process's wall time less the loop's own, which the run
# prints ("virtual time / wall (ms)"). On a shared machine the loop's time moves by 2x from
# run to run; what is left is start-up and the files written after the loop, and it moves
# far less, so a change to that part shows there when whole-process medians hide it.
#
#   scripts/outside_loop.sh BEFORE AFTER N SCENARIO [ARGS...]
#   scripts/outside_loop.sh /tmp/base/target/release/stampede target/release/stampede 12 \
#       scenarios/backlog-38k.toml --set client.preset=naive
#
# Prints, for each binary, the medians of the whole process, the loop and the rest (ms),
# and in how many pairs the second binary's rest was the smaller.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 BEFORE AFTER N SCENARIO [ARGS...]" >&2
  exit 2
fi
before="$1" after="$2" n="$3" scenario="$4"
shift 4
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for _ in $(seq 1 "$n"); do
  for which in before after; do
    bin="${!which}"
    rm -rf "$work/out"
    start=$(date +%s%N)
    # A run whose expectations fail exits non-zero: its times count all the same.
    loop=$({ "$bin" run "$scenario" "$@" --out "$work/out" 2>&1 || true; } | awk '/wall \(ms\)/ {print $NF}')
    end=$(date +%s%N)
    whole=$(((end - start) / 1000000))
    echo "$which $whole ${loop:?the run printed no loop time} $((whole - loop))"
  done
done | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    which, whole, loop, rest = line.split()
    runs.setdefault(which, []).append((int(whole), int(loop), int(rest)))
for which in ("before", "after"):
    r = runs[which]
    print(f"{which}: whole {statistics.median(x[0] for x in r)} ms, loop "
          f"{statistics.median(x[1] for x in r)} ms, rest {statistics.median(x[2] for x in r)} ms; "
          f"rests {[x[2] for x in r]}")
pairs = list(zip(runs["before"], runs["after"]))
print(f"after rest smaller in {sum(1 for b, a in pairs if a[2] < b[2])} of {len(pairs)} pairs")
'
