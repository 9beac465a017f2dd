"""Replays STAMPEDE_WORKLOAD through the official openai Python SDK, unmodified, with its
default retries and strict response validation on. Run by `stampede run ... --client`.
`--api responses` sends each request through the Responses API (`client.responses.create`)
instead of chat completions.

Every call's outcome is printed to client.log; the exit code is 0 when the workload was
played to the end (calls that failed are the provider's figures to judge, not a crash)."""
import json, os, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

import openai

scale = float(os.environ.get("STAMPEDE_TIME_SCALE", "1"))
workers = int(os.environ.get("STAMPEDE_WORKERS", "8"))
# The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY itself; strict validation makes any
# field the real API always sends, and we forgot, an error here.
client = openai.OpenAI(_strict_response_validation=True, timeout=float(os.environ.get("STAMPEDE_CLIENT_TIMEOUT", "600")))
start = float(os.environ["STAMPEDE_START_UNIX_MS"]) / 1000  # scenario time 0
lock = threading.Lock()
counts = {}


api = sys.argv[sys.argv.index("--api") + 1] if "--api" in sys.argv else "chat"
if api not in ("chat", "responses"):
    sys.exit(f"openai_driver.py: --api takes chat or responses, not {api!r}")


def respond(req):
    """One request through the Responses API: the outcome, as `call` prints it."""
    if req.get("stream"):
        events = client.responses.create(
            model=req["model"], input=req["messages"], max_output_tokens=req["max_tokens"],
            stream=True)
        text, usage = "", None
        for event in events:
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type in ("response.completed", "response.incomplete"):
                usage = event.response.usage
                assert event.response.output_text == text, "the deltas make the final text"
            elif event.type == "error":
                return f"stream error {event.code}"
        return "ok" if usage is not None else "ok-no-usage"
    answer = client.responses.create(
        model=req["model"], input=req["messages"], max_output_tokens=req["max_tokens"])
    assert answer.usage.total_tokens > 0 and answer.output_text
    return "ok"


def call(req):
    time.sleep(max(0.0, req["at_ms"] / scale / 1000 - (time.time() - start)))
    try:
        if api == "responses":
            outcome = respond(req)
        elif req.get("stream"):
            chunks = client.chat.completions.create(
                model=req["model"], messages=req["messages"], max_tokens=req["max_tokens"],
                stream=True, stream_options={"include_usage": True})
            text, usage = "", None
            for chunk in chunks:
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
                if chunk.usage is not None:
                    usage = chunk.usage
            outcome = "ok" if usage is not None else "ok-no-usage"
        else:
            answer = client.chat.completions.create(
                model=req["model"], messages=req["messages"], max_tokens=req["max_tokens"])
            assert answer.usage.total_tokens > 0
            outcome = "ok"
    except openai.APIStatusError as e:
        outcome = f"status {e.status_code} {type(e).__name__}"
    except openai.APIConnectionError as e:
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
