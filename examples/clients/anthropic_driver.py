"""Replays STAMPEDE_WORKLOAD through the official anthropic Python SDK, unmodified, with its
default retries and strict response validation on. Run by `stampede run ... --client`.

Every call's outcome is printed to client.log; the exit code is 0 when the workload was
played to the end, 1 when a response failed validation (a wire-format bug)."""
import json, os, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

import anthropic

scale = float(os.environ.get("STAMPEDE_TIME_SCALE", "1"))
workers = int(os.environ.get("STAMPEDE_WORKERS", "8"))
# The SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY itself.
client = anthropic.Anthropic(_strict_response_validation=True, timeout=float(os.environ.get("STAMPEDE_CLIENT_TIMEOUT", "600")))
start = float(os.environ["STAMPEDE_START_UNIX_MS"]) / 1000  # scenario time 0
lock = threading.Lock()
counts = {}


def call(req):
    time.sleep(max(0.0, req["at_ms"] / scale / 1000 - (time.time() - start)))
    try:
        if req.get("stream"):
            with client.messages.stream(model=req["model"], max_tokens=req["max_tokens"],
                                        messages=req["messages"]) as stream:
                text = "".join(stream.text_stream)
                final = stream.get_final_message()
            outcome = "ok" if final.usage.output_tokens > 0 and text else "ok-empty"
        else:
            answer = client.messages.create(model=req["model"], max_tokens=req["max_tokens"],
                                            messages=req["messages"])
            assert answer.usage.input_tokens > 0 and answer.content[0].text
            outcome = "ok"
    except anthropic.APIStatusError as e:
        outcome = f"status {e.status_code} {type(e).__name__}"
    except anthropic.APIConnectionError as e:
        outcome = type(e).__name__
    except Exception as e:  # a validation error is a wire-format bug: say so loudly
        outcome = f"error {type(e).__name__}: {e}"
    print(f"request {req['id']}: {outcome}", flush=True)
    with lock:
        counts[outcome] = counts.get(outcome, 0) + 1


requests = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
with ThreadPoolExecutor(max_workers=workers) as pool:
    list(pool.map(call, requests))
print(json.dumps(counts, sort_keys=True), flush=True)
sys.exit(1 if any(k.startswith("error") for k in counts) else 0)
