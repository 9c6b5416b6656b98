"""Request-rate measurement: wrk (one thread) when installed, else a small asyncio load generator."""
from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    rps: float
    p50_ms: float | None
    p99_ms: float | None
    errors: int
    tool: str
    requests: int = 0


def wrk_path() -> str | None:
    return shutil.which("wrk")


def _ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    if not m:
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def run_wrk(url: str, headers: dict[str, str], seconds: float, connections: int) -> LoadResult:
    argv = [wrk_path() or "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "10s"]
    for k, v in headers.items():
        argv += ["-H", f"{k}: {v}"]
    out = subprocess.run(argv + [url], capture_output=True, text=True, timeout=seconds + 30).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    errors = 0
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if non2xx:
        errors += int(non2xx.group(1))
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if sock:
        errors += sum(int(g) for g in sock.groups())
    total = re.search(r"(\d+) requests in", out)
    return LoadResult(rps, _ms(p50.group(1)) if p50 else None, _ms(p99.group(1)) if p99 else None, errors, "wrk",
                      int(total.group(1)) if total else 0)


async def _py_conn(host: str, port: int, request: bytes, until: float, latencies: list[float], errors: list[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            m = re.search(rb"(?i)content-length:\s*(\d+)", head)
            if m:
                await reader.readexactly(int(m.group(1)))
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                errors[0] += 1
    finally:
        writer.close()


def run_python(url: str, headers: dict[str, str], seconds: float, connections: int) -> LoadResult:
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"GET {path} HTTP/1.1", f"Host: {parts.netloc}"] + [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    latencies: list[float] = []
    errors = [0]

    async def main() -> float:
        start = time.perf_counter()
        until = start + seconds
        await asyncio.gather(*(_py_conn(parts.hostname or "127.0.0.1", parts.port or 80, request, until, latencies, errors)
                               for _ in range(connections)))
        return time.perf_counter() - start

    elapsed = asyncio.run(main())
    latencies.sort()
    pick = (lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000) if latencies else (lambda q: None)
    return LoadResult(len(latencies) / elapsed, pick(0.5), pick(0.99), errors[0], "python (asyncio)", len(latencies))


def measure(url: str, headers: dict[str, str], seconds: float, connections: int = 16) -> LoadResult:
    """Requests/s of GET url; wrk when available."""
    if wrk_path():
        return run_wrk(url, headers, seconds, connections)
    return run_python(url, headers, seconds, connections)
