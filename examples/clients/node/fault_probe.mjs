// Sends STAMPEDE_WORKLOAD one request at a time through an official Node.js SDK (argv[2]:
// openai, openai-responses, the openai SDK's Responses API, or anthropic), streamed, with
// the SDK's retries off except on the last request, and prints what the SDK raised for
// each: `request N: ok` or `request N: ErrorClass`. tests/node_clients.rs pairs that with a
// scenario whose k-th attempt gets the k-th fault (tests/clients/faults-*.toml).
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const api = process.argv[2];
const timeout = 2000; // ms
const Sdk = api === "anthropic" ? Anthropic : OpenAI;
const requests = readFileSync(process.env.STAMPEDE_WORKLOAD, "utf8")
  .split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));

for (const [i, req] of requests.entries()) {
  const client = new Sdk({ timeout, maxRetries: i + 1 < requests.length ? 0 : 2 });
  let outcome = "ok";
  try {
    if (api === "openai") {
      const stream = await client.chat.completions.create({
        model: req.model, messages: req.messages, max_tokens: req.max_tokens,
        stream: true, stream_options: { include_usage: true },
      });
      for await (const _ of stream);
    } else if (api === "openai-responses") {
      const stream = client.responses.stream({
        model: req.model, input: req.messages, max_output_tokens: req.max_tokens,
      });
      for await (const _ of stream);
      await stream.finalResponse();
    } else {
      const stream = client.messages.stream({
        model: req.model, max_tokens: req.max_tokens, messages: req.messages,
      });
      await stream.finalMessage();
    }
  } catch (e) {
    outcome = e.constructor.name;
  }
  console.log(`request ${req.id}: ${outcome}`);
}
