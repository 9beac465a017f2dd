//! The scenario the live driver's benchmarks play (`live_overhead`, `live_alloc_count`,
//! which include this file by path): the provider answers at once (`fixed = "0ms"`) with no
//! limits, so every figure is the harness's own, and `attempts` requests arrive as one
//! backlog for `workers` workers.

/// The scenario's text for `attempts` requests and `workers` workers.
pub fn scenario_text(attempts: u64, workers: u64) -> String {
    format!(
        r#"
name = "live-overhead"
seed = 1
duration = "1h"
[provider]
latency = {{ fixed = "0ms" }}
tool_latency = {{ fixed = "0ms" }}
reject_latency = "0ms"
[[provider.scopes]]
id = "account:bench"
[[provider.credentials]]
key = "sk-bench"
scope = "account:bench"
[[workload]]
tenant = "bench"
credential = "sk-bench"
class = "llm"
count = {attempts}
arrival = "backlog"
prompt_tokens = 100
max_output_tokens = 20
[client]
preset = "stampede"
workers = {workers}
"#
    )
}
