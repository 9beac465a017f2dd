"""A client that retries blindly: no SDK, no Idempotency-Key, no backoff, no reading of
Retry-After. It replays STAMPEDE_WORKLOAD against OPENAI_BASE_URL and re-sends any request
that did not get a 2xx, up to five times, after a fixed 100 ms (scenario time)."""
import json, os, sys, time, urllib.request

base = os.environ["OPENAI_BASE_URL"].rstrip("/")
key = os.environ["OPENAI_API_KEY"]
scale = float(os.environ.get("STAMPEDE_TIME_SCALE", "1"))
start = float(os.environ["STAMPEDE_START_UNIX_MS"]) / 1000  # scenario time 0
done = 0
for line in open(os.environ["STAMPEDE_WORKLOAD"]):
    req = json.loads(line)
    time.sleep(max(0.0, req["at_ms"] / scale / 1000 - (time.time() - start)))
    body = json.dumps(req["body"]).encode()
    for attempt in range(5):
        http = urllib.request.Request(base + "/chat/completions", data=body, method="POST",
            headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(http, timeout=30) as answer:
                answer.read()
                done += 1
                break
        except Exception:
            time.sleep(0.1 / scale)
print(f"blind client: {done} answered", file=sys.stderr)
