// Replays STAMPEDE_WORKLOAD through the official openai Node.js SDK, unmodified, with its
// default retries. Run by `stampede run ... --client -- node examples/clients/node/openai_driver.mjs`.
// `--api responses` sends each request through the Responses API (`client.responses.create`)
// instead of chat completions.
//
// The Node.js SDK validates no answer, so this driver checks what a program reads of one:
// the object's type, the text, the usage, that a chat stream's deltas make a text and that
// a Responses stream's make its final text.
// A check that fails is a wire-format bug and prints `error ...`; the exit code is 1 then,
// else 0 once the workload was played to the end (calls that failed are the provider's
// figures to judge, not a crash). Every call's outcome is printed to client.log.
import OpenAI from "openai";
import { check, play, timeoutMs } from "./workload.mjs";

// The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY itself.
const client = new OpenAI({ timeout: timeoutMs });
const at = process.argv.indexOf("--api");
const api = at >= 0 ? process.argv[at + 1] : "chat";
if (api !== "chat" && api !== "responses") {
  console.error(`openai_driver.mjs: --api takes chat or responses, not ${JSON.stringify(api)}`);
  process.exit(2);
}

async function chat(req) {
  const args = { model: req.model, messages: req.messages, max_tokens: req.max_tokens };
  if (req.stream) {
    const chunks = await client.chat.completions.create({
      ...args, stream: true, stream_options: { include_usage: true },
    });
    let text = "";
    let usage = null;
    for await (const chunk of chunks) {
      check(chunk.object === "chat.completion.chunk", `a chunk's object is ${chunk.object}`);
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    check(text, "the deltas made no text");
    return usage ? "ok" : "ok-no-usage";
  }
  const answer = await client.chat.completions.create(args);
  check(answer.object === "chat.completion", `object is ${answer.object}`);
  check(typeof answer.choices[0]?.message?.content === "string", "no text in choices[0]");
  check(answer.usage?.total_tokens > 0, "no usage");
  return "ok";
}

async function responses(req) {
  const args = { model: req.model, input: req.messages, max_output_tokens: req.max_tokens };
  if (req.stream) {
    const events = await client.responses.create({ ...args, stream: true });
    let text = "";
    let usage = null;
    for await (const event of events) {
      if (event.type === "response.output_text.delta") text += event.delta;
      else if (event.type === "response.completed" || event.type === "response.incomplete") {
        usage = event.response.usage;
        // `output_text` is the SDK's sum of a response's text, made for `create`'s answers
        // only (it is no field of the API's): a streamed response's is read off its items.
        const final = event.response.output
          .filter((item) => item.type === "message")
          .flatMap((item) => item.content)
          .filter((part) => part.type === "output_text")
          .map((part) => part.text)
          .join("");
        check(final === text, "the deltas make the final text");
      } else if (event.type === "error") return `stream error ${event.code}`;
    }
    return usage ? "ok" : "ok-no-usage";
  }
  const answer = await client.responses.create(args);
  check(answer.object === "response", `object is ${answer.object}`);
  check(answer.usage?.total_tokens > 0 && answer.output_text, "no text or usage");
  return "ok";
}

await play(
  (req) => (api === "responses" ? responses(req) : chat(req)),
  (e) => {
    if (e instanceof OpenAI.APIConnectionError) return e.constructor.name;
    if (e instanceof OpenAI.APIError && e.status) return `status ${e.status} ${e.constructor.name}`;
    return null;
  },
);
