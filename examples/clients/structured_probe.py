"""Asks the provider for structured answers through an official SDK (argv[1]: openai,
openai-responses or anthropic), one request of STAMPEDE_WORKLOAD each, and prints what came
back: `NAME: ok VALUE` or `NAME: ExceptionClass`. OpenAI: `chat.completions.parse` with a
pydantic model, the same streamed, a forced tool call (`tool_choice="required"`), the same
streamed; openai-responses: the same four through the Responses API (`responses.parse`,
`responses.stream`).
Anthropic: a forced tool call (`tool_choice={"type": "any"}`), the same streamed, and
`messages.parse` with a pydantic model (`output_config.format`).
tests/clients.rs checks that each parses as the SDK parses the real API's answers."""
import json, os, sys
from typing import List, Optional
from pydantic import BaseModel

api = sys.argv[1]


class Step(BaseModel):
    n: int
    note: Optional[str]


class Plan(BaseModel):
    title: str
    steps: List[Step]
    done: bool


requests = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]


def report(name, call):
    try:
        print(f"{name}: ok {call()}", flush=True)
    except Exception as e:
        print(f"{name}: {type(e).__name__} {e}", flush=True)


if api == "openai":
    import openai
    client = openai.OpenAI(_strict_response_validation=True, timeout=10, max_retries=0)
    tool = openai.pydantic_function_tool(Plan, name="make_plan")
    args = lambda r: dict(model=r["model"], messages=r["messages"], max_tokens=r["max_tokens"])

    def parsed():
        m = client.chat.completions.parse(**args(requests[0]), response_format=Plan)
        return type(m.choices[0].message.parsed).__name__

    def parsed_stream():
        with client.chat.completions.stream(**args(requests[1]), response_format=Plan) as s:
            for _ in s:
                pass
            return type(s.get_final_completion().choices[0].message.parsed).__name__

    def tool_call():
        m = client.chat.completions.parse(**args(requests[2]), tools=[tool], tool_choice="required")
        call = m.choices[0].message.tool_calls[0]
        return f"{call.function.name} {type(call.function.parsed_arguments).__name__} {m.choices[0].finish_reason}"

    def tool_call_stream():
        with client.chat.completions.stream(**args(requests[3]), tools=[tool], tool_choice="required") as s:
            for _ in s:
                pass
            call = s.get_final_completion().choices[0].message.tool_calls[0]
            return f"{call.function.name} {type(call.function.parsed_arguments).__name__}"

    report("parse", parsed)
    report("parse_stream", parsed_stream)
    report("tool", tool_call)
    report("tool_stream", tool_call_stream)
elif api == "openai-responses":
    import openai
    client = openai.OpenAI(_strict_response_validation=True, timeout=10, max_retries=0)
    tool = {"type": "function", "name": "make_plan", "parameters": Plan.model_json_schema(),
            "strict": False}
    args = lambda r: dict(model=r["model"], input=r["messages"], max_output_tokens=r["max_tokens"])

    def parsed():
        r = client.responses.parse(**args(requests[0]), text_format=Plan)
        return f"{type(r.output_parsed).__name__} {r.status}"

    def parsed_stream():
        with client.responses.stream(**args(requests[1]), text_format=Plan) as s:
            for _ in s:
                pass
            return type(s.get_final_response().output_parsed).__name__

    def tool_call():
        r = client.responses.create(**args(requests[2]), tools=[tool], tool_choice="required")
        call = r.output[0]
        Plan.model_validate_json(call.arguments)
        return f"{call.type} {call.name} {r.status}"

    def tool_call_stream():
        with client.responses.stream(**args(requests[3]), tools=[tool],
                                     tool_choice={"type": "function", "name": "make_plan"}) as s:
            for _ in s:
                pass
            call = s.get_final_response().output[0]
        Plan.model_validate_json(call.arguments)
        return f"{call.type} {call.name}"

    report("parse", parsed)
    report("parse_stream", parsed_stream)
    report("tool", tool_call)
    report("tool_stream", tool_call_stream)
else:
    import anthropic
    client = anthropic.Anthropic(_strict_response_validation=True, timeout=10, max_retries=0)
    tools = [{"name": "make_plan", "description": "a plan", "input_schema": Plan.model_json_schema()}]
    args = lambda r: dict(model=r["model"], messages=r["messages"], max_tokens=r["max_tokens"],
                          tools=tools, tool_choice={"type": "any"})

    def tool_call():
        m = client.messages.create(**args(requests[0]))
        block = m.content[0]
        Plan.model_validate(block.input)
        return f"{block.type} {block.name} {m.stop_reason}"

    def tool_call_stream():
        with client.messages.stream(**args(requests[1])) as s:
            for _ in s:
                pass
            m = s.get_final_message()
        block = m.content[0]
        Plan.model_validate(block.input)
        return f"{block.type} {block.name} {m.stop_reason}"

    def parsed():
        m = client.messages.parse(model=requests[2]["model"], messages=requests[2]["messages"],
                                  max_tokens=requests[2]["max_tokens"], output_format=Plan)
        return type(m.parsed_output).__name__

    report("tool", tool_call)
    report("tool_stream", tool_call_stream)
    report("parse", parsed)
