#!/usr/bin/env python3
"""A vLLM V1 server log of SIZE_MIB: the start-up of samples/vllm-tp2 (this project's own
sample), then request traffic until the size is reached — the API server's metrics line
every few seconds, uvicorn access lines and request log lines, values made up,
deterministic (seeded). What `events` reads on a vLLM server that has been up for days;
the anchor is `rg -c -f benches/vllm_markers.ere` (the start-up markers a user greps for).

    benches/gen_vllm_log.py OUT SIZE_MIB
"""
import datetime
import os
import random
import sys

out_path, mib = sys.argv[1], int(sys.argv[2])
checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(checkout, "samples", "vllm-tp2", "server.log"), "rb") as f:
    startup = f.read()
rng = random.Random(26)
t = datetime.datetime(2026, 3, 14, 10, 4, 0)
limit = mib << 20
with open(out_path, "wb") as out:
    out.write(startup)
    written = len(startup)
    buf = []
    while written < limit:
        t += datetime.timedelta(milliseconds=rng.randint(5, 400))
        stamp = t.strftime("%m-%d %H:%M:%S")
        r = rng.random()
        if r < 0.3:
            line = (
                f"(APIServer pid=4100) INFO {stamp} [loggers.py:127] Engine 000: Avg prompt "
                f"throughput: {rng.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: "
                f"{rng.uniform(0, 3000):.1f} tokens/s, Running: {rng.randint(0, 128)} reqs, "
                f"Waiting: {rng.randint(0, 20)} reqs, GPU KV cache usage: "
                f"{rng.uniform(0, 100):.1f}%, Prefix cache hit rate: {rng.uniform(0, 100):.1f}%\n"
            )
        elif r < 0.75:
            line = (
                f"(APIServer pid=4100) INFO:     10.{rng.randint(0, 255)}.{rng.randint(0, 255)}."
                f"{rng.randint(1, 254)}:{rng.randint(1024, 65535)} - \"POST /v1/chat/completions "
                f"HTTP/1.1\" 200 OK\n"
            )
        else:
            line = (
                f"(APIServer pid=4100) INFO {stamp} [logger.py:43] Received request "
                f"chatcmpl-{rng.getrandbits(96):024x}: prompt: 'question {rng.randint(0, 99999)}', "
                f"params: SamplingParams(n=1, temperature={rng.uniform(0, 1):.2f}, top_p=1.0, "
                f"max_tokens={rng.randint(16, 4096)}), prompt_token_ids: None, lora_request: None.\n"
            )
        b = line.encode()
        buf.append(b)
        written += len(b)
        if len(buf) >= 4096:
            out.write(b"".join(buf))
            buf.clear()
    out.write(b"".join(buf))
