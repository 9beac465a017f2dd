// Replays STAMPEDE_WORKLOAD through the official anthropic Node.js SDK, unmodified, with its
// default retries. Run by
// `stampede run ... --client -- node examples/clients/node/anthropic_driver.mjs`.
//
// The Node.js SDK validates no answer, so this driver checks what a program reads of one:
// the message's type, its text, its usage, and a stream's final message. A check that fails
// is a wire-format bug and prints `error ...`; the exit code is 1 then, else 0 once the
// workload was played to the end. Every call's outcome is printed to client.log.
import { readFileSync } from "node:fs";
import Anthropic from "@anthropic-ai/sdk";

const scale = Number(process.env.STAMPEDE_TIME_SCALE ?? "1");
const workers = Number(process.env.STAMPEDE_WORKERS ?? "8");
// The SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY itself. Its timeout is in
// milliseconds.
const client = new Anthropic({ timeout: Number(process.env.STAMPEDE_CLIENT_TIMEOUT ?? "600") * 1000 });
const start = Number(process.env.STAMPEDE_START_UNIX_MS); // scenario time 0, Unix ms

function check(condition, what) {
  if (!condition) throw new Error(`the answer is not as the real API's: ${what}`);
}

function checkMessage(message) {
  check(message.type === "message" && message.role === "assistant", `type ${message.type}`);
  check(message.content[0]?.type === "text" && message.content[0].text, "no text block first");
  check(message.usage?.input_tokens > 0 && message.usage.output_tokens > 0, "no usage");
}

async function send(req) {
  const args = { model: req.model, max_tokens: req.max_tokens, messages: req.messages };
  if (req.stream) {
    const stream = client.messages.stream(args);
    let text = "";
    stream.on("text", (delta) => { text += delta; });
    const final = await stream.finalMessage();
    checkMessage(final);
    check(final.content[0].text === text, "the deltas make the final text");
    return "ok";
  }
  checkMessage(await client.messages.create(args));
  return "ok";
}

async function call(req) {
  const due = start + req.at_ms / scale - Date.now();
  if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
  let outcome;
  try {
    outcome = await send(req);
  } catch (e) {
    if (e instanceof Anthropic.APIConnectionError) outcome = e.constructor.name;
    else if (e instanceof Anthropic.APIError && e.status) outcome = `status ${e.status} ${e.constructor.name}`;
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
