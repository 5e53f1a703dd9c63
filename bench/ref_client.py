#!/usr/bin/env python3
"""Reference client for `hone bench selfcheck`: a plain Python asyncio SSE client doing
the same job as hone's (N concurrent streaming /v1/completions requests, parse each
SSE event, json.loads it, stamp non-empty text chunks). Standard library only.
Prints `chunks_per_s <rate>` for hone to compare against."""
import argparse
import asyncio
import json
import time


async def one_stream(port, index, chunks, stamps):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"prompt": f"sc-{index}", "max_tokens": chunks, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                 b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    while True:  # headers
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
    count = 0
    while True:
        line = await reader.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            break
        event = json.loads(data)
        choices = event.get("choices") or []
        if choices and choices[0].get("text"):
            count += 1
            stamps.append(time.perf_counter_ns())
    writer.close()
    return count


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--streams", type=int, default=64)
    p.add_argument("--chunks", type=int, default=20000)
    a = p.parse_args()
    stamps = []
    t0 = time.perf_counter()
    counts = await asyncio.gather(*(one_stream(a.port, i, a.chunks, stamps) for i in range(a.streams)))
    dt = time.perf_counter() - t0
    total = sum(counts)
    print(f"chunks {total}")
    print(f"seconds {dt:.3f}")
    print(f"chunks_per_s {total / dt:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
