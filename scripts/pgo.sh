#!/usr/bin/env bash
# A profile-guided (PGO) release build of `stampede`: for teams that run long sweeps, large
# scenarios or restart campaigns, where the simulator's speed is their wait.
#
#   scripts/pgo.sh                     # builds target/pgo/stampede
#   scripts/pgo.sh --bin stampede --example bench_run ...   # these programs instead
#   scripts/pgo.sh --check             # every step, on the core's cycle benchmark alone (CI)
#
# Three steps, each printed as it starts:
# 1. an instrumented release build (rustc's -Cprofile-generate) in target/pgo/instrumented;
# 2. training: that build's `stampede` plays every shipped scenario under its own preset and
#    under naive (`stampede check scenarios/`), and one live run of the quickstart on a
#    SQLite ledger (the HTTP client, the fake provider's server, the ledger), writing every
#    file a run writes; the counts of which branches and calls ran go to
#    target/pgo/profiles, merged by llvm-profdata into target/pgo/merged.profdata;
# 3. the release build again, optimised with those counts (-Cprofile-use), in
#    target/pgo/optimized (linked as target/pgo/release); `stampede` is copied to
#    target/pgo/stampede.
#
# The training plays the scenarios users run, not the Speed table's benchmark programs, so
# the table measures the build any user gets (`cargo run --release --example speed -- --pgo`
# runs this script and measures its programs). Its backlog-38k rows play a shipped scenario,
# which the training played too; the million-request run, the core's cycle, the HTTP server
# under wrk and the live driver's overhead run are not in it. A run's files are the release
# build's byte for byte (the code is the same; only its layout, inlining and branch order
# change): `scripts/same_runs.sh target/release/stampede target/pgo/stampede` compares them.
#
# It needs llvm-profdata of the LLVM the Rust compiler is built on: the `llvm-tools`
# component of rustup, which it adds when missing. It builds for the host triple explicitly
# (`--target`), so build scripts and proc macros, which run on the host, are neither
# instrumented nor optimised with the profile. RUSTFLAGS already set are kept. Two release
# builds with whole-program optimisation: about 4 minutes each on the Intel Xeon of
# docs/speed-history.md, more on slower CPUs. CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
pgo="$target/pgo"
check=false
programs=()
for arg in "$@"; do
  case "$arg" in
    --check) check=true ;;
    -h | --help)
      sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) programs+=("$arg") ;;
  esac
done
if $check && [ ${#programs[@]} -gt 0 ]; then
  echo "pgo.sh: --check builds the core's cycle benchmark alone; give no programs with it" >&2
  exit 2
fi
if $check; then
  programs=(-p stampede-core --example cycle_rate)
elif [ ${#programs[@]} -eq 0 ]; then
  programs=(--bin stampede)
else
  programs=(--workspace "${programs[@]}")
fi

host="$(rustc -vV | sed -n 's/^host: //p')"
tools="$(rustc --print sysroot)/lib/rustlib/$host/bin"
if [ ! -x "$tools/llvm-profdata" ]; then
  echo "pgo.sh: adding rustup's llvm-tools component (llvm-profdata)..." >&2
  if ! command -v rustup >/dev/null 2>&1 || ! rustup component add llvm-tools >&2; then
    echo "pgo.sh: needs llvm-profdata of the compiler's LLVM ($tools/llvm-profdata): install it with \`rustup component add llvm-tools\`" >&2
    exit 2
  fi
fi

# Absolute: the instrumented programs write their counts there from any directory, and
# rustc reads the merged profile from its own.
pgo_abs="$(mkdir -p "$pgo" && cd "$pgo" && pwd)"
profiles="$pgo_abs/profiles"
rm -rf "$profiles"
mkdir -p "$profiles"

# The release build of the programs with the extra rustc FLAG, into target directory DIR.
release_build() {
  RUSTFLAGS="${RUSTFLAGS:-} $1" cargo build --release -q --target "$host" --target-dir "$2" \
    "${programs[@]}"
}

echo "pgo.sh: 1/3 instrumented build (${programs[*]})" >&2
release_build "-Cprofile-generate=$profiles" "$pgo/instrumented"
built="$pgo/instrumented/$host/release"

echo "pgo.sh: 2/3 training" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Runs a training command allowed to exit with up to `allowed`: 1 is an expectation that
# failed (naive fails most of them, as it should), 2 from `check` a scenario that refuses
# the preset it was given (three describe a client stack of their own and refuse naive);
# anything above is a broken run, which would leave the profile short.
trained() {
  local allowed="$1" status=0
  shift
  "$@" >"$work/out" 2>&1 || status=$?
  if [ "$status" -gt "$allowed" ]; then
    cat "$work/out" >&2
    echo "pgo.sh: training command failed (exit $status): $*" >&2
    exit 2
  fi
}
if $check; then
  trained 0 "$built/examples/cycle_rate" 20000
  # Shown beside the optimised build's run at the end.
  cp "$work/out" "$work/instrumented"
else
  trained 1 "$built/stampede" check scenarios/ --out "$work/own"
  trained 2 "$built/stampede" check scenarios/ --set client.preset=naive --out "$work/naive"
  trained 1 "$built/stampede" run scenarios/quickstart.toml --live --time-scale 300 \
    --ledger "$work/ledger.sqlite" --out "$work/live"
fi
merged="$pgo_abs/merged.profdata"
"$tools/llvm-profdata" merge -o "$merged" "$profiles"

echo "pgo.sh: 3/3 optimised build" >&2
# Functions whose code differs between the two builds (generic code instantiated in several
# crates) are built as without a profile: said once here rather than in a warning per
# function. Functions the training never ran are taken as cold (optimised for size).
release_build "-Cprofile-use=$merged -Cllvm-args=-no-pgo-warn-mismatch" "$pgo/optimized"
out="$pgo/optimized/$host/release"
# One path for the optimised programs, whatever the host (`speed --pgo` runs them from it).
ln -sfn "optimized/$host/release" "$pgo/release"
if $check; then
  cat "$work/instrumented"
  "$out/examples/cycle_rate" 20000
  echo "pgo.sh: --check done (the figures above are a check's, instrumented first, not a benchmark)" >&2
elif [ -x "$out/stampede" ]; then
  cp "$out/stampede" "$pgo/stampede"
  echo "pgo.sh: done: $pgo/stampede (programs in $out)" >&2
else
  echo "pgo.sh: done: programs in $out" >&2
fi
