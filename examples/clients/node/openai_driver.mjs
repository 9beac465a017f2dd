// Replays STAMPEDE_WORKLOAD through the official openai Node.js SDK, unmodified, with its
// default retries. Run by `stampede run ... --client -- node examples/clients/node/openai_driver.mjs`.
// `--api responses` sends each request through the Responses API (`client.responses.create`)
// instead of chat completions.
//
// The Node.js SDK validates no answer, so this driver checks what a program reads of one:
// the object's type, the text, the usage, and that a stream's deltas make its final text.
// A check that fails is a wire-format bug and prints `error ...`; the exit code is 1 then,
// else 0 once the workload was played to the end (calls that failed are the provider's
// figures to judge, not a crash). Every call's outcome is printed to client.log.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const scale = Number(process.env.STAMPEDE_TIME_SCALE ?? "1");
const workers = Number(process.env.STAMPEDE_WORKERS ?? "8");
// The SDK reads OPENAI_BASE_URL and OPENAI_API_KEY itself. Its timeout is in milliseconds.
const client = new OpenAI({ timeout: Number(process.env.STAMPEDE_CLIENT_TIMEOUT ?? "600") * 1000 });
const start = Number(process.env.STAMPEDE_START_UNIX_MS); // scenario time 0, Unix ms
const at = process.argv.indexOf("--api");
const api = at >= 0 ? process.argv[at + 1] : "chat";
if (api !== "chat" && api !== "responses") {
  console.error(`openai_driver.mjs: --api takes chat or responses, not ${JSON.stringify(api)}`);
  process.exit(2);
}

function check(condition, what) {
  if (!condition) throw new Error(`the answer is not as the real API's: ${what}`);
}

async function chat(req) {
  const args = { model: req.model, messages: req.messages, max_tokens: req.max_tokens };
  if (req.stream) {
    const chunks = await client.chat.completions.create({
      ...args, stream: true, stream_options: { include_usage: true },
    });
    let usage = null;
    for await (const chunk of chunks) {
      check(chunk.object === "chat.completion.chunk", `a chunk's object is ${chunk.object}`);
      if (chunk.usage) usage = chunk.usage;
    }
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

async function call(req) {
  const due = start + req.at_ms / scale - Date.now();
  if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
  let outcome;
  try {
    outcome = await (api === "responses" ? responses(req) : chat(req));
  } catch (e) {
    if (e instanceof OpenAI.APIConnectionError) outcome = e.constructor.name;
    else if (e instanceof OpenAI.APIError && e.status) outcome = `status ${e.status} ${e.constructor.name}`;
    else outcome = `error ${e.constructor.name}: ${e.message}`;
  }
  console.log(`request ${req.id}: ${outcome}`);
  return outcome;
}

const requests = readFileSync(process.env.STAMPEDE_WORKLOAD, "utf8")
  .split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
const counts = {};
let next = 0;
// `workers` calls at a time, each worker taking the next request when it is done.
await Promise.all(Array.from({ length: workers }, async () => {
  while (next < requests.length) {
    const outcome = await call(requests[next++]);
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  }
}));
const sorted = Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
console.log(JSON.stringify(sorted));
process.exit(Object.keys(counts).some((k) => k.startsWith("error")) ? 1 : 0);
