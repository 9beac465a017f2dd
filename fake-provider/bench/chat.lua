-- wrk script: POST a small chat completion with the bench key.
wrk.method = "POST"
wrk.headers["authorization"] = "Bearer sk-bench"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":16}'
