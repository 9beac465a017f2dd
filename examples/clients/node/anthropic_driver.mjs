// Replays STAMPEDE_WORKLOAD through the official anthropic Node.js SDK, unmodified, with its
// default retries. Run by
// `stampede run ... --client -- node examples/clients/node/anthropic_driver.mjs`.
//
// The Node.js SDK validates no answer, so this driver checks what a program reads of one:
// the message's type, its text, its usage, and a stream's final message. A check that fails
// is a wire-format bug and prints `error ...`; the exit code is 1 then, else 0 once the
// workload was played to the end. Every call's outcome is printed to client.log.
import Anthropic from "@anthropic-ai/sdk";
import { check, play, timeoutMs } from "./workload.mjs";

// The SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY itself.
const client = new Anthropic({ timeout: timeoutMs });

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

await play(send, (e) => {
  if (e instanceof Anthropic.APIConnectionError) return e.constructor.name;
  if (e instanceof Anthropic.APIError && e.status) return `status ${e.status} ${e.constructor.name}`;
  return null;
});
