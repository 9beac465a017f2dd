#!/usr/bin/env python3
"""Audits a run directory's figures against the files beside them, as a skeptical user would.

    python3 scripts/audit_figures.py RUN_DIR [RUN_DIR ...]

Re-derives from `attempts.csv` (one row per attempt as the provider's journal saw it) every
figure of `summary.json` that the file's columns decide, and checks the rest of the run
directory against the summary: `timeseries.csv` and `tenants.csv` bucket by bucket,
`dead_letter.jsonl`, `escalations.jsonl` and `unfinished.csv` line by line, and the sums the
contract promises (`failures_by_reason` adds up to failed + escalations, ...). Python's
standard library only, and none of Stampede's code: an independent reading of the files.

Prints one line per mismatch and exits 1 when there is any, 0 otherwise (2: a file is
missing or unreadable). `--verbose` lists every check made.
"""

import csv
import json
import math
import os
import sys
from collections import Counter, defaultdict

# The routes a record look-up reaches (`GET /v1/records/{id}`, `?external_ref=`,
# `?idempotency_key=`): reconciliations. A record write is `POST /v1/records`.
RECORD_WRITE = "/v1/records"


def is_lookup(route):
    return route.startswith("/v1/records") and route != RECORD_WRITE


def is_success(outcome):
    """A 2xx answered whole: the outcome is the status alone."""
    return outcome.isdigit() and 200 <= int(outcome) <= 299


def round4(x):
    # Rust's f64::round rounds half away from zero; Python's round() is banker's.
    return math.floor(x * 10_000.0 + 0.5) / 10_000.0 if x >= 0 else -math.floor(-x * 10_000.0 + 0.5) / 10_000.0


def retry_waves(retry_times_ms, end_bins):
    """README "Retry waves, defined": retries in 100 ms bins; a bin is hot when it holds at
    least max(10, 4 x m), m the mean over the 101 bins from 50 before to 50 after it
    (clipped at the run's start and end); a wave is a maximal run of hot bins."""
    if not retry_times_ms:
        return 0, 0
    n = max(end_bins, max(t // 100 for t in retry_times_ms) + 1)
    bins = [0] * n
    for t in retry_times_ms:
        bins[t // 100] += 1
    prefix = [0]
    for b in bins:
        prefix.append(prefix[-1] + b)
    waves, hot_before = 0, False
    for i, b in enumerate(bins):
        lo, hi = max(0, i - 50), min(n, i + 51)
        mean = (prefix[hi] - prefix[lo]) / (hi - lo)
        hot = b > 0 and b >= max(10.0, 4.0 * mean)
        if hot and not hot_before:
            waves += 1
        hot_before = hot
    return waves, max(bins)


class Audit:
    def __init__(self, run_dir, verbose=False):
        self.dir = run_dir
        self.verbose = verbose
        self.mismatches = []
        self.checked = 0

    def path(self, name):
        return os.path.join(self.dir, name)

    def eq(self, what, summary_value, derived, how):
        """`summary_value` (what the run reported) against `derived` (what the files say)."""
        self.checked += 1
        if summary_value != derived:
            self.mismatches.append(f"{what}: summary says {summary_value!r}, {how} gives {derived!r}")
        elif self.verbose:
            print(f"  ok {what} = {derived!r} ({how})")

    def at_least(self, what, summary_value, lower, how):
        self.checked += 1
        if summary_value < lower:
            self.mismatches.append(f"{what}: summary says {summary_value!r}, below the {lower!r} {how} shows")
        elif self.verbose:
            print(f"  ok {what} = {summary_value!r} >= {lower!r} ({how})")

    def jsonl(self, name):
        p = self.path(name)
        if not os.path.exists(p):
            return []
        with open(p, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def csv_rows(self, name):
        p = self.path(name)
        if not os.path.exists(p):
            return None
        with open(p, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def run(self):
        with open(self.path("summary.json"), encoding="utf-8") as f:
            s = json.load(f)
        rows = self.csv_rows("attempts.csv")
        if rows is None:
            raise FileNotFoundError(self.path("attempts.csv"))
        for r in rows:
            for k in ("seq", "at_ms", "done_ms", "action", "attempt_no", "logical", "logical_attempt"):
                r[k] = int(r[k])
            for k in ("committed", "retry_after_violation", "duplicate", "scope_wait_violation"):
                r[k] = r[k] == "true"
        several_providers = bool(s.get("by_provider"))
        self.attempts(s, rows, several_providers)
        self.timeseries(s, rows)
        self.tenants(s, rows)
        self.groups(s, rows)
        self.outcomes(s, rows)
        return self.mismatches

    # --- what attempts.csv decides -------------------------------------------------------

    def attempts(self, s, rows, several_providers):
        A = "attempts.csv"
        self.eq("outbound_attempts", s["outbound_attempts"], len(rows), f"{A} rows")
        self.eq("status_counts", s["status_counts"], dict(Counter(r["outcome"] for r in rows)),
                f"{A} outcome")
        retries = [r for r in rows if r["logical_attempt"] > 1]
        firsts = [r for r in rows if r["logical_attempt"] == 1]
        self.eq("retries", s["retries"], len(retries), f"{A} rows with logical_attempt > 1")
        self.eq("provider_logical_requests", s["provider_logical_requests"], len(firsts),
                f"{A} rows with logical_attempt = 1")
        want = round4(s["outbound_attempts"] / s["logical_requests"]) if s["logical_requests"] else 0.0
        self.eq("attempts_per_logical", s["attempts_per_logical"], want,
                "outbound_attempts / logical_requests")
        self.eq("retry_after_violations", s["retry_after_violations"],
                sum(r["retry_after_violation"] for r in rows), f"{A} retry_after_violation")
        self.eq("scope_wait_violations", s["scope_wait_violations"],
                sum(r["scope_wait_violation"] for r in rows), f"{A} scope_wait_violation")
        dups = [r for r in rows if r["duplicate"]]
        cross = s.get("cross_provider_duplicates", 0)
        self.eq("duplicates", s["duplicates"], len(dups) + cross,
                f"{A} duplicate rows + cross_provider_duplicates")
        if not cross:
            self.eq("duplicate_writes", s["duplicate_writes"],
                    sum(r["route"] == RECORD_WRITE for r in dups), f"{A} duplicate record writes")
            self.eq("duplicate_completions", s["duplicate_completions"],
                    sum(r["route"] != RECORD_WRITE for r in dups), f"{A} duplicate other commits")
        self.eq("reconciliations", s["reconciliations"], sum(is_lookup(r["route"]) for r in rows),
                f"{A} record look-up rows")
        # A duplicate is a commit; a look-up is no attempt of a request.
        self.eq("duplicate rows that did not commit", 0,
                sum(1 for r in dups if not r["committed"]), A)
        self.eq("look-up rows numbered as attempts of a request", 0,
                sum(1 for r in rows if is_lookup(r["route"]) and r["logical_attempt"] != 0), A)
        # The provider's numbering, per provider: gap-free seqs, and each logical request's
        # attempts numbered 1, 2, 3 ... in arrival order.
        if not several_providers:
            self.eq("seqs out of place (seq, row)", [],
                    [(r["seq"], i) for i, r in enumerate(rows, 1) if r["seq"] != i][:5], f"{A}: gap-free from 1")
            seen = defaultdict(int)
            bad = 0
            for r in rows:
                if r["logical_attempt"] == 0:
                    continue
                seen[r["logical"]] += 1
                bad += seen[r["logical"]] != r["logical_attempt"]
            self.eq("logical_attempt numbering 1, 2, ... per logical", 0, bad, A)
            self.eq("provider_logical_requests as distinct logical ids", s["provider_logical_requests"],
                    len(seen), f"{A} distinct logical of attempts")
        end_ms = max([s.get("virtual_duration_ms", 0)] + [r["at_ms"] for r in rows])
        waves, peak = retry_waves([r["at_ms"] for r in retries], end_ms // 100 + 1)
        self.eq("retry_waves", s["retry_waves"], waves, f"{A} retries in 100 ms bins (README definition)")
        self.eq("peak_retries_per_100ms", s["peak_retries_per_100ms"], peak, f"{A} fullest 100 ms bin")
        # errors: every answer without success by status and error code. A 2xx the client had
        # gone before taking ("undelivered") is not told apart in attempts.csv.
        errs = {}
        for r in rows:
            if is_success(r["outcome"]):
                continue
            k = (r["outcome"], r["error_code"])
            e = errs.setdefault(k, {"count": 0, "first_ms": r["at_ms"], "last_ms": r["at_ms"]})
            e["count"] += 1
            e["first_ms"] = min(e["first_ms"], r["at_ms"])
            e["last_ms"] = max(e["last_ms"], r["at_ms"])
        reported = {(e["status"], e["message"]): {k: e[k] for k in ("count", "first_ms", "last_ms")}
                    for e in s.get("errors", []) if e["message"] != "undelivered"}
        self.eq("errors (all but undelivered)", reported, errs, f"{A} non-2xx rows by outcome, error_code")
        if "by_provider" in s:
            bp = s["by_provider"].values()
            for k in ("outbound_attempts", "retries", "provider_logical_requests"):
                self.eq(f"sum of by_provider.*.{k}", s[k], sum(v[k] for v in bp), "summary")
        if "retries_by_group" in s:
            self.eq("sum of retries_by_group", s["retries"], sum(s["retries_by_group"].values()), "summary")
        elif s["retries"]:
            self.eq("retries_by_group present", True, False, "retries > 0")

    # --- timeseries.csv and tenants.csv, bucket by bucket ----------------------------------

    def bucket_ms(self, ts):
        if len(ts) >= 2:
            return int(ts[1]["t_ms"]) - int(ts[0]["t_ms"])
        return 1000

    def timeseries(self, s, rows):
        ts = self.csv_rows("timeseries.csv")
        if not ts:
            return
        w = self.bucket_ms(ts)
        want = defaultdict(Counter)
        for r in rows:
            c = want[r["at_ms"] // w]
            c["attempts"] += 1
            c["retries"] += r["logical_attempt"] > 1
            o = r["outcome"]
            st = int(o) if o.isdigit() else None
            if st == 429:
                c["status_429"] += 1
            elif st == 503:
                c["status_503"] += 1
            elif st is not None and 500 <= st <= 599:
                c["status_5xx_other"] += 1
            elif st is not None and 400 <= st <= 499:
                c["status_4xx_other"] += 1
            else:
                # 2xx delivered, or no whole answer (undelivered 2xx included): attempts.csv
                # does not tell an undelivered 2xx apart, so the two columns are summed.
                c["status_2xx+dropped"] += 1
        cols = ("attempts", "retries", "status_429", "status_503", "status_5xx_other", "status_4xx_other")
        got = defaultdict(Counter)
        for t in ts:
            b = int(t["t_ms"]) // w
            for k in cols:
                got[b][k] = int(t[k])
            got[b]["status_2xx+dropped"] = int(t["status_2xx"]) + int(t["dropped"])
        bad = []
        for b in sorted(set(want) | set(got)):
            for k in cols + ("status_2xx+dropped",):
                if want[b][k] != got[b][k]:
                    bad.append((b * w, k, got[b][k], want[b][k]))
        self.eq("timeseries.csv buckets (t_ms, column, file, attempts.csv)", [], bad[:5],
                "attempts.csv by arrival bucket")
        self.eq("sum of timeseries.csv completed", s["completed"], sum(int(t["completed"]) for t in ts),
                "timeseries.csv")
        self.eq("sum of timeseries.csv tokens_used", s["tokens_used"],
                sum(int(t["tokens_used"]) for t in ts), "timeseries.csv")

    def tenants(self, s, rows):
        tr = self.csv_rows("tenants.csv")
        if tr is None:
            return
        ts = self.csv_rows("timeseries.csv") or []
        w = self.bucket_ms(ts)
        want = Counter((r["at_ms"] // w * w, r["tenant"]) for r in rows)
        got = Counter()
        completed = Counter()
        for t in tr:
            got[(int(t["t_ms"]), t["tenant"])] += int(t["attempts"])
            completed[t["tenant"]] += int(t["completed"])
        bad = sorted((k, got[k], want[k]) for k in set(want) | set(got) if got[k] != want[k])
        self.eq("tenants.csv attempts ((t_ms, tenant), file, attempts.csv)", [], bad[:5],
                "attempts.csv by arrival bucket and tenant")
        by_tenant = s.get("by_tenant", {})
        self.eq("tenants.csv completed by tenant", {k: v["completed"] for k, v in by_tenant.items() if v["completed"]},
                {k: v for k, v in completed.items() if v}, "tenants.csv")

    # --- the outcome tables ----------------------------------------------------------------

    def groups(self, s, rows):
        per_tenant = Counter(r["tenant"] for r in rows)
        if "by_tenant" in s:
            self.eq("by_tenant.*.attempts", {k: v["attempts"] for k, v in s["by_tenant"].items() if v["attempts"]},
                    dict(per_tenant), "attempts.csv rows by tenant")
        if "by_route" in s:
            # attempts.csv names the route template without its method.
            rep = Counter()
            for k, v in s["by_route"].items():
                rep[k.split(" ", 1)[1]] += v["attempts"]
            self.eq("by_route.*.attempts by template", {k: v for k, v in rep.items() if v},
                    dict(Counter(r["route"] for r in rows)), "attempts.csv rows by route")
        for g in ("by_class", "by_tenant", "by_priority", "by_route"):
            if g not in s:
                continue
            vals = s[g].values()
            for k in ("logical_requests", "completed", "failed", "cancelled", "escalations", "unfinished"):
                self.eq(f"sum of {g}.*.{k}", s[k], sum(v[k] for v in vals), "summary")
            for k in ("attempts",):
                self.eq(f"sum of {g}.*.{k}", s["outbound_attempts"], sum(v[k] for v in vals), "summary")
            for k in ("tokens_used", "tokens_reserved", "duplicates_suppressed"):
                if k in s:
                    self.eq(f"sum of {g}.*.{k}", s[k], sum(v.get(k, 0) for v in vals), "summary")

    def outcomes(self, s, rows):
        ended = s["completed"] + s["failed"] + s["cancelled"] + s["escalations"] + s["unfinished"]
        self.eq("completed + failed + cancelled + escalations + unfinished", s["logical_requests"], ended,
                "summary")
        dead = self.jsonl("dead_letter.jsonl")
        st = Counter(d["status"] for d in dead)
        capped = len(dead) >= 200_000
        if not capped:
            self.eq("failed", s["failed"], st["failed"], "dead_letter.jsonl status failed")
            self.eq("escalations", s["escalations"], st["escalated"] + st["reconciliation_required"],
                    "dead_letter.jsonl status escalated or reconciliation_required")
            self.eq("reconciliation_required", s["reconciliation_required"], st["reconciliation_required"],
                    "dead_letter.jsonl")
            self.eq("failures_by_reason", s.get("failures_by_reason", {}), dict(Counter(d["reason"] for d in dead)),
                    "dead_letter.jsonl reason")
            esc = self.jsonl("escalations.jsonl")
            self.eq("escalations.jsonl lines", sum(d["escalated"] for d in dead), len(esc),
                    "dead letters marked escalated")
            self.eq("escalations.jsonl actions", sorted(d["action"] for d in dead if d["escalated"]),
                    sorted(e["action"] for e in esc), "dead_letter.jsonl")
            # Each dead letter's attempts and `sent` against the rows of its action.
            by_action = Counter(r["action"] for r in rows)
            if s.get("mode") != "client" and not s.get("crashes"):
                bad = [(d["action"], d["attempts"], by_action[d["action"]]) for d in dead
                       if d["attempts"] != by_action[d["action"]]]
                self.eq("dead letters' attempts (action, letter, attempts.csv rows)", [], bad[:5],
                        "attempts.csv rows of the action")
                bad = [(d["action"], d["sent"]) for d in dead if d["sent"] != (by_action[d["action"]] > 0)]
                self.eq("dead letters' sent (action, letter)", [], bad[:5], "attempts.csv rows of the action")
            # Deadline misses the dead letters show; completed late ones are not in any file.
            late = 0
            for d in dead:
                dl = d["input"].get("deadline_ms")
                if d["reason"] in ("deadline_exceeded", "deadline_passed") or (
                        dl is not None and d["ended_at_ms"] > d["submitted_at_ms"] + dl):
                    late += 1
            self.at_least("deadline_misses", s["deadline_misses"], late, "dead_letter.jsonl")
        fbr = s.get("failures_by_reason", {})
        self.eq("sum of failures_by_reason", s["failed"] + s["escalations"], sum(fbr.values()), "summary")
        self.eq("sum of rejected_by_reason", s["rejected"], sum(s.get("rejected_by_reason", {}).values()),
                "summary")
        un = self.csv_rows("unfinished.csv") or []
        self.eq("unfinished", s["unfinished"], len(un), "unfinished.csv rows")
        self.eq("unfinished_sent", s["unfinished_sent"], sum(u.get("sent") == "true" for u in un),
                "unfinished.csv sent")


def main(argv):
    verbose = "--verbose" in argv
    dirs = [a for a in argv if a != "--verbose"]
    if not dirs:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    failed = False
    for d in dirs:
        audit = Audit(d, verbose)
        try:
            mismatches = audit.run()
        except (OSError, ValueError, KeyError) as e:
            print(f"{d}: cannot audit: {e!r}")
            return 2
        for m in mismatches:
            print(f"{d}: {m}")
        failed |= bool(mismatches)
        if verbose or not mismatches:
            print(f"{d}: {audit.checked} checks, {len(mismatches)} mismatches")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
