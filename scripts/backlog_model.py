#!/usr/bin/env python3
"""A hand-written discrete-event model of `scenarios/backlog-38k.toml` played by the naive
client: the reference a user would otherwise write by hand ("a SimPy model"), used to
benchmark the Rust simulator against. Pure Python 3, standard library only, one heapq
event loop over integer virtual milliseconds.

What it models (as the Rust sources do):
  * Workload: 38,000 jobs, all arriving at t = 0 (a backlog); prompt tokens lognormal with
    median 300 and p99 700 (rounded, clamped to [1, 4 * p99]); max_tokens 150; deadline
    75 min after arrival (t = 4,500,000 ms for every job).
  * Client (core/src/preset.rs `naive`, scenario max_attempts = 100): 96 workers; admission
    holds at most 96 live jobs, and a job that ends frees its place for the next backlog job
    at once (sim/src/driver_common/admission.rs). Any failure is retried after a fixed 1 s,
    Retry-After ignored, nothing shared, no local rate limits. Deadlines as in
    core/src/scheduler: a job admitted at or after its deadline fails `deadline_passed`; a
    send due at or after it fails `deadline_exceeded` at dispatch; a retry whose wake-up
    (now + 1 s) would be after it fails `deadline_exceeded` at once; the 100th refused
    attempt fails `attempts_exhausted`. A call admitted before the deadline may still
    complete after it (it then counts as completed and as a deadline miss).
  * Provider (fake-provider/src/model/limits.rs, mod.rs decide()): one scope, rpm 600,
    tpm 300,000, concurrency 48, count_rejected. Fixed one-minute windows aligned to t = 0.
    Checks in order: concurrency, rpm, tpm. An admitted call counts one request and
    prompt + max_tokens tokens, holds a slot until its answer leaves after a lognormal
    latency (median 2.8 s, p99 9 s, rounded to ms, capped at 100 * p99); every refusal
    (concurrency included) counts one request of the minute and is answered with a 429
    after 5 ms. Within one millisecond, answers are handled first (a finished call frees its
    slot before anything is sent), then retries due, then first sends of newly admitted
    jobs, each in FIFO order, as the Rust driver's turn does.

What it leaves out compared with the Rust simulator: no journal, no attempts.csv or other
files, no per-attempt measurement (latency or queue-wait percentiles, retry waves,
Retry-After violation counts), no idempotency keys, ledger or audit trail, no generic policy
engine (the naive rules are hard-coded), and no client timeout (60 s per attempt, about six
sigma above the latency median: no call comes near it). Its random streams are Python's,
not ChaCha8, so counts agree with the simulator's statistically, not exactly.

Goodput is completed jobs per minute over the service window, as the simulator defines it:
the window ends at the later of the deadline (75 min: unfinished work counts as unserved
until then) and the last completion. `loop_s` times the event loop alone (the prompt and
latency draws it makes included); `script_s` runs from just after the imports to the print
(interpreter start-up is in neither).

    python3 scripts/backlog_model.py [--seed N] [--json]
"""
import argparse
import heapq
import json
import math
import random
import time

SCRIPT_T0 = time.perf_counter()

JOBS = 38_000
WORKERS = 96                     # admission.queue_capacity = 96 live jobs
MAX_ATTEMPTS = 100               # [client.policy.classes.llm] max_attempts
RETRY_MS = 1_000                 # naive: fixed 1 s sleep after any failure
DEADLINE_MS = 75 * 60_000        # every job arrives at 0
PROMPT_MEDIAN, PROMPT_P99, MAX_TOKENS = 300, 700, 150
RPM, TPM, CONCURRENCY = 600, 300_000, 48
MINUTE_MS = 60_000
REJECT_MS = 5                    # provider reject_latency default
LAT_MEDIAN_MS, LAT_P99_MS = 2_800, 9_000
Z99 = 2.326347874040841

# Event kinds, in the order they are handled within one millisecond.
SUCCESS, REFUSED, RETRY_SEND, FIRST_SEND = 0, 1, 2, 3


def run(seed):
    # Separate streams for the workload and the provider's latencies, as the simulator has.
    work_rng = random.Random(f"{seed}-workload")
    lognorm = random.Random(f"{seed}-latency").lognormvariate
    mu_p = math.log(PROMPT_MEDIAN)
    sigma_p = (math.log(PROMPT_P99) - mu_p) / Z99
    prompt_cap = 4 * PROMPT_P99
    mu_l = math.log(LAT_MEDIAN_MS)
    sigma_l = (math.log(LAT_P99_MS) - mu_l) / Z99
    lat_cap = 100.0 * LAT_P99_MS

    charge = [0] * JOBS                                # tokens each attempt of a job charges
    attempts_of = [0] * JOBS

    def admit(j):
        # The job's prompt is drawn as it is pulled from the backlog; each attempt is
        # charged prompt + max_tokens (the provider's estimate).
        prompt = int(work_rng.lognormvariate(mu_p, sigma_p) + 0.5)
        charge[j] = min(max(prompt, 1), prompt_cap) + MAX_TOKENS

    heap = []
    push, pop = heapq.heappush, heapq.heappop
    seq = 0
    next_job = 0
    # Provider scope state.
    minute = 0
    m_requests = m_tokens = 0
    in_flight = 0
    # Counters.
    attempts = first_sends = completed = late_completions = 0
    refused_conc = refused_rpm = refused_tpm = 0
    exhausted = deadline_exceeded = 0
    last_completion = 0

    loop_t0 = time.perf_counter()
    for _ in range(min(WORKERS, JOBS)):                # t = 0: the first 96 jobs are admitted
        admit(next_job)
        push(heap, (0, FIRST_SEND, seq, next_job))
        seq += 1
        next_job += 1
    while heap:
        t, kind, _, j = pop(heap)
        if kind >= RETRY_SEND:
            if t >= DEADLINE_MS:                       # dispatch: head past its deadline
                deadline_exceeded += 1
            else:
                attempts += 1
                if kind == FIRST_SEND:
                    first_sends += 1
                attempts_of[j] += 1
                m = t // MINUTE_MS
                if m != minute:                        # fixed window rolled: counters reset
                    minute = m
                    m_requests = m_tokens = 0
                if in_flight >= CONCURRENCY:
                    refused_conc += 1
                elif m_requests >= RPM:
                    refused_rpm += 1
                elif m_tokens + charge[j] > TPM:
                    refused_tpm += 1
                else:                                  # admitted: request, tokens, a slot
                    m_requests += 1
                    m_tokens += charge[j]
                    in_flight += 1
                    lat = lognorm(mu_l, sigma_l)
                    lat = int((lat if lat < lat_cap else lat_cap) + 0.5)
                    push(heap, (t + lat, SUCCESS, seq, j))
                    seq += 1
                    continue
                m_requests += 1                        # count_rejected: a refusal uses a request
                push(heap, (t + REJECT_MS, REFUSED, seq, j))
                seq += 1
                continue
        elif kind == SUCCESS:
            in_flight -= 1                             # the slot is free once the answer left
            completed += 1
            last_completion = t
            if t > DEADLINE_MS:
                late_completions += 1
        else:                                          # a 429: retry after 1 s, if allowed
            if attempts_of[j] >= MAX_ATTEMPTS:
                exhausted += 1
            elif t + RETRY_MS > DEADLINE_MS:
                deadline_exceeded += 1
            else:
                push(heap, (t + RETRY_MS, RETRY_SEND, seq, j))
                seq += 1
                continue
        # A job ended: its place goes to the next backlog job, sent in this millisecond.
        if next_job < JOBS and t < DEADLINE_MS:
            admit(next_job)
            push(heap, (t, FIRST_SEND, seq, next_job))
            seq += 1
            next_job += 1
    loop_s = time.perf_counter() - loop_t0

    # Backlog jobs never admitted: offered at or after their deadline, refused for good.
    deadline_passed = JOBS - next_job
    failed = exhausted + deadline_exceeded + deadline_passed
    rejected = refused_conc + refused_rpm + refused_tpm
    window_ms = max(DEADLINE_MS, last_completion) if failed else last_completion
    return {
        "seed": seed,
        "jobs": JOBS,
        "completed": completed,
        "failed": failed,
        "deadline_misses": deadline_exceeded + deadline_passed + late_completions,
        "attempts": attempts,
        "rejected_429": rejected,
        "rejected_429_concurrency": refused_conc,
        "rejected_429_rpm": refused_rpm,
        "rejected_429_tpm": refused_tpm,
        "retries": attempts - first_sends,
        "jobs_sent": first_sends,
        "failed_attempts_exhausted": exhausted,
        "failed_deadline_exceeded": deadline_exceeded,
        "failed_deadline_passed": deadline_passed,
        "completed_after_deadline": late_completions,
        "goodput_per_min": round(completed * 60_000 / window_ms, 4) if window_ms else 0.0,
        "goodput_window_ms": window_ms,
        "loop_s": round(loop_s, 4),
    }


def main():
    parser = argparse.ArgumentParser(
        description="Discrete-event model of backlog-38k played by the naive client (see the"
        " module docstring).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    r = run(args.seed)
    r["script_s"] = round(time.perf_counter() - SCRIPT_T0, 4)
    if args.json:
        print(json.dumps(r))
        return
    print(f"backlog-38k, naive client, Python model (seed {r['seed']})")
    rows = [
        ("jobs", r["jobs"]),
        ("completed / failed", f"{r['completed']} / {r['failed']}"),
        ("  attempts exhausted / deadline exceeded / deadline passed",
         f"{r['failed_attempts_exhausted']} / {r['failed_deadline_exceeded']}"
         f" / {r['failed_deadline_passed']}"),
        ("deadline misses", r["deadline_misses"]),
        ("outbound attempts", r["attempts"]),
        ("429s (concurrency / rpm / tpm)",
         f"{r['rejected_429']} ({r['rejected_429_concurrency']} / {r['rejected_429_rpm']}"
         f" / {r['rejected_429_tpm']})"),
        ("retries", r["retries"]),
        ("goodput (completed/min over the service window)",
         f"{r['goodput_per_min']:.1f} ({r['goodput_window_ms']} ms)"),
        ("event loop wall (s)", f"{r['loop_s']:.3f}"),
        ("whole script wall (s)", f"{r['script_s']:.3f}"),
    ]
    for name, value in rows:
        print(f"  {name:<58} {value}")


if __name__ == "__main__":
    main()
