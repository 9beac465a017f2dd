#!/usr/bin/env bash
# Alternating before/after runs of one benchmark with two builds: how this project compares
# a change's wall time on a shared, noisy machine (README, Speed). Base and new alternate,
# base first, so a slow spell of the machine falls on both.
#
#   scripts/pairs.sh [-n PAIRS] BENCH BASE_EXAMPLES_DIR NEW_EXAMPLES_DIR
#
# BENCH is one of (the figure each pair compares):
#   cycle     cycle_rate 2000000                                  M cycles/s, higher is better
#   naive     bench_run 3 scenarios/backlog-38k.toml, naive       wall ms, lower is better
#   stampede  bench_run 5 scenarios/backlog-38k.toml              wall ms
#   million   bench_run 1 sim/examples/bench-1m.toml              wall ms
#   live      live_overhead 20000 64 (its median of 3)            attempts/s, higher is better
#   naive-out stampede run scenarios/backlog-38k.toml (naive) --out DIR, the whole process,
#             with the build's `stampede` beside its examples dir (DIR/../stampede)   wall ms
# Each directory holds a build's release examples: target/release/examples for the working
# tree (target/pgo/release/examples for scripts/pgo.sh's build), and for the base a worktree
# built apart, e.g.
#   git worktree add /tmp/base <rev> && CARGO_TARGET_DIR=/tmp/base-target cargo build \
#     --release --manifest-path /tmp/base/Cargo.toml -p stampede-sim --example bench_run \
#     -p stampede-core --example cycle_rate
#   scripts/pairs.sh cycle /tmp/base-target/release/examples target/release/examples
#
# Prints each pair, both medians and in how many pairs the new build did better (default 6
# pairs). A timing, not a proof: quote it with its medians and its count, and confirm a
# change by instruction counts (scripts/instructions.sh), which do not depend on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=6
if [ "${1:-}" = "-n" ]; then
  pairs="$2"
  shift 2
fi
usage="usage: scripts/pairs.sh [-n PAIRS] cycle|naive|stampede|million|live|naive-out BASE_EXAMPLES_DIR NEW_EXAMPLES_DIR"
if [ $# -ne 3 ] || ! [ "$pairs" -ge 1 ] 2>/dev/null; then
  echo "$usage" >&2
  exit 2
fi
bench="$1" base="$2" new="$3"

case "$bench" in
  cycle) example=cycle_rate args=(2000000) higher=1 unit="M cycles/s" ;;
  naive) example=bench_run args=(3 "scenarios/backlog-38k.toml@client.preset=naive") higher=0 unit=ms ;;
  stampede) example=bench_run args=(5 scenarios/backlog-38k.toml) higher=0 unit=ms ;;
  million) example=bench_run args=(1 sim/examples/bench-1m.toml) higher=0 unit=ms ;;
  live) example=live_overhead args=(20000 64) higher=1 unit=attempts/s ;;
  naive-out)
    example=../stampede higher=0 unit=ms
    args=(run scenarios/backlog-38k.toml --set client.preset=naive --no-render)
    ;;
  *)
    echo "unknown benchmark '$bench'; $usage" >&2
    exit 2
    ;;
esac
for dir in "$base" "$new"; do
  if [ ! -x "$dir/$example" ]; then
    echo "no executable $dir/$example: build the release examples first (see the header)" >&2
    exit 2
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One run's figure: cycle_rate ends its line with "N cycles/s" (printed in millions here);
# bench_run's last line is the scenario's row, wall ms in its third column; live_overhead's
# last line is "median of 3: N attempts/s ..."; `stampede run` is timed here, whole, and
# may exit 1 (naive fails the scenario's expectations, as it should).
figure() {
  local out start status=0
  if [ "$bench" = naive-out ]; then
    start="$(date +%s%N)"
    "$1/$example" "${args[@]}" --out "$work/run" >"$work/out" 2>&1 || status=$?
    if [ "$status" -gt 1 ]; then
      cat "$work/out" >&2
      exit 2
    fi
    echo $((($(date +%s%N) - start) / 1000000))
    return
  fi
  out="$("$1/$example" "${args[@]}")"
  case "$example" in
    cycle_rate) awk '{printf "%.2f\n", $(NF-1) / 1e6}' <<<"$out" ;;
    live_overhead) tail -n 1 <<<"$out" | awk '{print $4}' ;;
    *) tail -n 1 <<<"$out" | awk '{print $3}' ;;
  esac
}

median() {
  sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

base_figures=() new_figures=() better=0
for ((i = 1; i <= pairs; i++)); do
  b="$(figure "$base")"
  n="$(figure "$new")"
  base_figures+=("$b")
  new_figures+=("$n")
  if { [ "$higher" = 1 ] && awk -v n="$n" -v b="$b" 'BEGIN {exit !(n > b)}'; } ||
    { [ "$higher" = 0 ] && awk -v n="$n" -v b="$b" 'BEGIN {exit !(n < b)}'; }; then
    better=$((better + 1))
  fi
  echo "pair $i: base $b, new $n ($unit)"
done
base_median="$(printf '%s\n' "${base_figures[@]}" | median)"
new_median="$(printf '%s\n' "${new_figures[@]}" | median)"
echo "$bench: medians base $base_median, new $new_median ($unit); new better in $better of $pairs pairs"
