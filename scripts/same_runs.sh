#!/usr/bin/env bash
# Whether two builds of `stampede` write the same run directories: every shipped scenario,
# under its own preset and under `client.preset=naive`, run with each binary into a run
# directory of its own (`stampede run --out`), then compared file by file after masking
# `wall_ms` (the only figure that is the machine's, not the run's).
#
#   scripts/same_runs.sh BASE_BINARY NEW_BINARY
#
# Build the base with a worktree, e.g.
#   git worktree add /tmp/base <rev> && CARGO_TARGET_DIR=/tmp/base-target \
#     cargo build --release --manifest-path /tmp/base/Cargo.toml --bin stampede
#   scripts/same_runs.sh /tmp/base-target/release/stampede target/release/stampede
#
# Given the same binary twice it shows that a run is byte for byte the same from process to
# process. A scenario that refuses a preset (amplification, layers and router-failover
# describe a client stack of their own and refuse `naive`) must refuse it with both binaries,
# with the same message. Prints one line per run and a count; exits 1 when any differ.
# SCENARIOS="quickstart fallback" limits it to those scenarios (tests/same_runs.rs does).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: scripts/same_runs.sh BASE_BINARY NEW_BINARY (both executable)" >&2
  exit 2
fi
base="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
new="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# wall_ms is written as `"wall_ms": N` in JSON and as a `wall_ms` row or column elsewhere.
mask() {
  find "$1" -type f -print0 | xargs -0 sed -i -E \
    -e 's/("wall_ms": *)[0-9]+/\1MASKED/g' \
    -e 's/(wall_ms[^0-9\n]{0,12})[0-9]+/\1MASKED/g'
}

same=0 differ=0 refused=0
if [ -n "${SCENARIOS:-}" ]; then
  scenarios=()
  for name in $SCENARIOS; do scenarios+=("scenarios/$name.toml"); done
else
  scenarios=(scenarios/*.toml)
fi
for scenario in "${scenarios[@]}"; do
  name="$(basename "$scenario" .toml)"
  if [ ! -f "$scenario" ]; then
    echo "same_runs.sh: no scenario $scenario" >&2
    exit 2
  fi
  for preset in own naive; do
    set_args=()
    [ "$preset" = naive ] && set_args=(--set client.preset=naive)
    base_rc=0 new_rc=0
    "$base" run "$scenario" "${set_args[@]}" --out "$work/base/$name-$preset" \
      >"$work/base-$name-$preset.log" 2>&1 || base_rc=$?
    "$new" run "$scenario" "${set_args[@]}" --out "$work/new/$name-$preset" \
      >"$work/new-$name-$preset.log" 2>&1 || new_rc=$?
    if [ ! -d "$work/base/$name-$preset" ] && [ ! -d "$work/new/$name-$preset" ] \
      && [ "$base_rc" = "$new_rc" ] \
      && diff -q "$work/base-$name-$preset.log" "$work/new-$name-$preset.log" >/dev/null; then
      echo "refused  $name ($preset) by both, exit $base_rc"
      refused=$((refused + 1))
      continue
    fi
    mask "$work/base/$name-$preset" 2>/dev/null || true
    mask "$work/new/$name-$preset" 2>/dev/null || true
    if [ "$base_rc" = "$new_rc" ] && diff -r -q "$work/base/$name-$preset" "$work/new/$name-$preset" >/dev/null 2>&1; then
      echo "same     $name ($preset), exit $base_rc"
      same=$((same + 1))
    else
      echo "DIFFER   $name ($preset): exit $base_rc / $new_rc"
      diff -r -q "$work/base/$name-$preset" "$work/new/$name-$preset" 2>&1 | head -5 | sed 's/^/           /'  || true
      differ=$((differ + 1))
    fi
  done
done
echo "$same run directories the same, $differ differing, $refused refused by both"
[ "$differ" -eq 0 ]
