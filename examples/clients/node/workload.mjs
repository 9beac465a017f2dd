// What the Node.js drivers share: STAMPEDE_WORKLOAD played by STAMPEDE_WORKERS calls at a
// time, each request sent when the scenario makes it due, and the run's end.
import { readFileSync } from "node:fs";

const scale = Number(process.env.STAMPEDE_TIME_SCALE ?? "1");
const workers = Number(process.env.STAMPEDE_WORKERS ?? "8");
const start = Number(process.env.STAMPEDE_START_UNIX_MS); // scenario time 0, Unix ms
if (!Number.isFinite(start)) {
  // Without it every request would be sent at once, whatever the scenario says.
  console.error("STAMPEDE_START_UNIX_MS is not set: run this under `stampede run ... --client`");
  process.exit(2);
}

/** The SDKs' timeout in milliseconds (STAMPEDE_CLIENT_TIMEOUT is in seconds). */
export const timeoutMs = Number(process.env.STAMPEDE_CLIENT_TIMEOUT ?? "600") * 1000;

/** Throws when `condition` is false: the answer is not what the real API sends. */
export function check(condition, what) {
  if (!condition) throw new Error(`the answer is not as the real API's: ${what}`);
}

/**
 * Sends every request of the workload through `send` (which returns its outcome, or
 * throws), each at its time; `failed(error)` names an outcome for what `send` threw.
 * Prints each outcome (`request N: ...`), then the outcomes counted, and exits 1 when one
 * is an `error` (a wire-format bug), else 0.
 */
export async function play(send, failed) {
  const requests = readFileSync(process.env.STAMPEDE_WORKLOAD, "utf8")
    .split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
  const counts = {};
  let next = 0;
  // `workers` calls at a time, each worker taking the next request when it is done.
  await Promise.all(Array.from({ length: workers }, async () => {
    while (next < requests.length) {
      const req = requests[next++];
      const due = start + req.at_ms / scale - Date.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
      let outcome;
      try {
        outcome = await send(req);
      } catch (e) {
        outcome = failed(e) ?? `error ${e.constructor.name}: ${e.message}`;
      }
      console.log(`request ${req.id}: ${outcome}`);
      counts[outcome] = (counts[outcome] ?? 0) + 1;
    }
  }));
  const sorted = Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
  console.log(JSON.stringify(sorted));
  process.exit(Object.keys(counts).some((k) => k.startsWith("error")) ? 1 : 0);
}
