"""Sends STAMPEDE_WORKLOAD one request at a time through an official SDK (argv[1]: openai,
openai-responses, the openai SDK's Responses API, or anthropic), streamed, with the SDK's retries off except on the last request, and prints what
the SDK raised for each: `request N: ok` or `request N: ExceptionClass`. tests/clients.rs
pairs that with a scenario whose k-th attempt gets the k-th fault."""
import json, os, sys

api = sys.argv[1]
timeout = 2.0
if api in ("openai", "openai-responses"):
    import openai as sdk
    client = sdk.OpenAI(_strict_response_validation=True, timeout=timeout, max_retries=0)
else:
    import anthropic as sdk
    client = sdk.Anthropic(_strict_response_validation=True, timeout=timeout, max_retries=0)

requests = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
for i, req in enumerate(requests):
    c = client if i + 1 < len(requests) else client.with_options(max_retries=2)
    try:
        if api == "openai":
            stream = c.chat.completions.create(model=req["model"], messages=req["messages"],
                max_tokens=req["max_tokens"], stream=True, stream_options={"include_usage": True})
            for _ in stream:
                pass
        elif api == "openai-responses":
            with c.responses.stream(model=req["model"], input=req["messages"],
                                    max_output_tokens=req["max_tokens"]) as stream:
                for _ in stream:
                    pass
                stream.get_final_response()
        else:
            with c.messages.stream(model=req["model"], max_tokens=req["max_tokens"],
                                   messages=req["messages"]) as stream:
                for _ in stream.text_stream:
                    pass
                stream.get_final_message()
        outcome = "ok"
    except Exception as e:
        outcome = type(e).__name__
    print(f"request {req['id']}: {outcome}", flush=True)
