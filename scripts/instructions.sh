#!/usr/bin/env bash
# Instruction counts of the simulator's benchmarks, for comparing two commits without the
# wall-clock noise of a shared machine: valgrind's callgrind counts the instructions a run
# executes, and two runs of the same binary agree to a few thousand in billions.
#
#   scripts/instructions.sh            # needs valgrind (apt-get install -y valgrind)
#
# It prints the total for the naive backlog loop (`bench_run 1`, 415,403 attempts), the
# stampede backlog loop (`bench_run 1`, 38,000 requests) and 200,000 core cycles
# (`cycle_rate 200000`, whose jobs are built outside its timed part but counted here), with
# the count per attempt, request or cycle, then the five functions that execute the most
# of the core's cycle themselves. Run it on both commits and compare.
#
# Instructions are not time: a cache miss costs none, and under valgrind the CPU has no SHA
# extensions, so the idempotency key's hash counts several times what it costs natively.
# Confirm a change with alternating wall-clock runs of the two binaries too. The totals
# move by a fraction of a percent with code layout alone (an unrelated edit can), so read
# small differences as none. For a breakdown by function, keep the profile (KEEP=DIR) and
# read it with `callgrind_annotate --inclusive=yes DIR/naive-loop.out`; the naive loop's
# total is also split among the parts of an attempt's path (the core's dispatch and answer,
# the provider model, the measurement, key derivation, the rest). CARGO_TARGET_DIR is
# honoured. PROFILE=NAME counts the programs built in cargo's profile NAME (with every
# feature on, as `cargo test --workspace --all-features` builds) instead of release: CI
# sets PROFILE=dev to reuse its test build; such counts are that build's and say so.
# PROFILE=pgo counts the profile-guided build instead, which it does not build: make it first
# with `scripts/pgo.sh --bin stampede --example bench_run --example cycle_rate` (or
# `cargo run --release --example speed -- --pgo`, which builds those too).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null 2>&1; then
  echo "instructions.sh needs valgrind: apt-get install -y valgrind" >&2
  exit 2
fi

# Built with the whole workspace selected, as the Speed table's command builds them (the
# features of shared dependencies are unified over the packages selected, so another
# selection is another build): the two share one build. Another profile than release is
# built with every feature on, as the test build is, whose artifacts it then reuses (CI).
profile="${PROFILE:-release}"
features=(--all-features)
case "$profile" in
  release) features=() profile_dir=release ;;
  bench) profile_dir=release ;;
  dev | test) profile_dir=debug ;;
  # Where scripts/pgo.sh links its optimised build.
  pgo) profile_dir=pgo/release ;;
  *) profile_dir="$profile" ;;
esac
if [ "$profile" = pgo ]; then
  for example in bench_run cycle_rate; do
    if [ ! -x "${CARGO_TARGET_DIR:-target}/$profile_dir/examples/$example" ]; then
      echo "instructions.sh: PROFILE=pgo needs the profile-guided $example: run scripts/pgo.sh --bin stampede --example bench_run --example cycle_rate first" >&2
      exit 2
    fi
  done
else
  cargo build --profile "$profile" -q --workspace "${features[@]}" --example bench_run --example cycle_rate
fi
examples="$(cd "${CARGO_TARGET_DIR:-target}/$profile_dir/examples" && pwd)"
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  work="$(cd "$KEEP" && pwd)"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi

# Runs `name`'s command under callgrind and prints its total, and the total over `per`.
count() {
  local name="$1" per="$2" unit="$3"
  shift 3
  valgrind --tool=callgrind --callgrind-out-file="$work/$name.out" "$@" \
    >/dev/null 2>"$work/$name.err" || {
    cat "$work/$name.err" >&2
    exit 1
  }
  awk -v name="$name" -v per="$per" -v unit="$unit" '/Collected :/ {
      printf "%-16s %15s instructions  %8.0f per %s\n", name, $4, $4 / per, unit
    }' "$work/$name.err"
}

# Splits a profile's total among the parts of an attempt's path: each part is the inclusive
# count of the functions named (callgrind's figure for a function with every call it makes),
# over `per`. A part whose functions were all inlined into their callers has no count of its
# own and says so; its instructions then fall in "the rest".
parts() {
  local profile="$1" per="$2" unit="$3"
  callgrind_annotate --inclusive=yes "$profile" 2>/dev/null |
    sed -nE 's/^ *([0-9,]+) \([^)]*\)  [^:]*:(.*)$/\1\t\2/p' |
    sed -E 's/ \([0-9,]+x\)//; s/ \[[^]]*\]$//' | tr -d , |
    awk -F'\t' -v per="$per" -v unit="$unit" '
      { if ($1 > inclusive[$2]) inclusive[$2] = $1 }
      function part(label, names,    n, i, list, sum, found) {
        n = split(names, list, "|")
        for (i = 1; i <= n; i++) {
          if (list[i] in inclusive) { sum += inclusive[list[i]]; found = 1 }
        }
        if (found) {
          printf "  %-58s %8.0f per %s\n", label, sum / per, unit
          named += sum
        } else {
          printf "  %-58s %8s\n", label, "inlined, in the rest"
        }
      }
      END {
        total = inclusive["bench_run::main"]
        part("core, dispatch (Scheduler::fill_outbox)",
             "stampede_core::scheduler::dispatch::<impl stampede_core::scheduler::Scheduler<L>>::fill_outbox")
        part("core, answers (Scheduler::on_outcome)",
             "stampede_core::scheduler::Scheduler<L>::on_outcome")
        part("provider model, arrival (ProviderModel::arrive)",
             "stampede_provider::model::ProviderModel::arrive")
        part("measurement (Measurement::on_journal, on_terminal)",
             "stampede_sim::measure::Measurement::on_journal|stampede_sim::measure::Measurement::on_terminal")
        part("idempotency keys (SHA-256, in software under valgrind)",
             "stampede_core::idempotency::feed|digest::FixedOutput::finalize_fixed")
        printf "  %-58s %8.0f per %s\n", "the rest (driver loop, admission, events, wire)",
          (total - named) / per, unit
      }'
}

# Prints the `n` functions that execute the most of a profile's instructions themselves
# (callgrind's exclusive count, with what was inlined into them from other files added back:
# callgrind splits a function's own count by the source file each line came from), as a
# share of the program's total.
largest() {
  local profile="$1" n="$2" annotated
  annotated="$(callgrind_annotate --auto=no "$profile" 2>/dev/null)"
  local total
  total="$(sed -nE 's/^ *([0-9,]+) \([^)]*\)  PROGRAM TOTALS$/\1/p' <<<"$annotated" | tr -d ,)"
  sed -nE 's/^ *([0-9,]+) \([^)]*\)  [^:]*:(.*)$/\1\t\2/p' <<<"$annotated" |
    sed -E 's/ \[[^]]*\]$//' | tr -d , |
    awk -F'\t' '{ own[$2] += $1 } END { for (f in own) printf "%d\t%s\n", own[f], f }' |
    # awk keeps the first n and reads on: `head` would stop reading, and under pipefail the
    # SIGPIPE it leaves `sort` with (once the list outgrows the pipe's buffer, as the dev
    # build's does) fails the script.
    sort -rn |
    awk -F'\t' -v n="$n" -v total="$total" 'NR <= n { printf "  %5.1f%%  %s\n", 100 * $1 / total, $2 }'
}

# Counts from another profile, or from one that cargo applies CARGO_PROFILE_<PROFILE>_*
# over, or built with RUSTFLAGS (every compilation), are another build's: say so.
another_build() {
  echo "$1:"
  echo "not comparable with counts from the build as Cargo.toml sets the release profile"
}
if [ "$profile" = pgo ]; then
  another_build "the profile-guided build of scripts/pgo.sh, not the release profile"
elif [ "$profile" != release ]; then
  another_build "built in cargo's $profile profile with every feature on, not the release profile"
fi
upper="$(printf '%s' "$profile" | tr 'a-z-' 'A-Z_')"
overrides="$(env | grep -E "^(CARGO_PROFILE_${upper}_[A-Z_]+|RUSTFLAGS)=" | sort | paste -sd ' ' || true)"
if [ -n "$overrides" ]; then
  another_build "built with the $profile profile overridden ($overrides)"
fi
count naive-loop 415403 attempt \
  "$examples/bench_run" 1 'scenarios/backlog-38k.toml@client.preset=naive'
parts "$work/naive-loop.out" 415403 attempt
count stampede-loop 38000 request "$examples/bench_run" 1 scenarios/backlog-38k.toml
count core-cycles 200000 cycle "$examples/cycle_rate" 200000
echo "core-cycles: the functions that execute the most of it themselves (with what was inlined into them)"
largest "$work/core-cycles.out" 5
