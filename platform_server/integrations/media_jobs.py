"""Job-style media generation (video, music, 3D models) against a provider's HTTP endpoints.

    POST {base}/media/{kind}/jobs        {model, prompt, ...options}  -> {id, status}
    GET  {base}/media/{kind}/jobs/{id}   -> {id, status: queued|running|succeeded|failed, error?,
                                             output?: {url, contentType}}
    GET  output.url                      -> the file (same origin as {base}; relative URLs allowed)

Submit, poll with exponential backoff until the job ends or the time limit passes, download.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin, urlsplit

from platform_server.integrations.llm import LlmError
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

RUNNING = ("queued", "running")


@dataclass(frozen=True)
class JobPolicy:
    poll_initial_s: float
    poll_max_s: float
    timeout_s: float
    max_bytes: int


@dataclass(frozen=True)
class MediaResult:
    body: bytes
    content_type: str
    job_id: str


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def _json(r: aiohttp.ClientResponse, what: str) -> dict[str, Any]:
    if r.status >= 400:
        try:
            message = (await r.json(content_type=None)).get("error", {}).get("message")
        except (ValueError, AttributeError, aiohttp.ContentTypeError):
            message = None
        raise LlmError(f"{what}: HTTP {r.status}" + (f": {message}" if message else ""), status=r.status)
    try:
        data = await r.json(content_type=None)
    except ValueError:
        raise LlmError(f"{what}: the answer is not JSON")
    if not isinstance(data, dict):
        raise LlmError(f"{what}: the answer is not a JSON object")
    return data


async def generate(base_url: str, api_key: str | None, kind: str, body: dict[str, Any], policy: JobPolicy) -> MediaResult:
    """Run one generation job to its end and download the result."""
    jobs_url = base_url.rstrip("/") + f"/media/{kind}/jobs"
    deadline = time.monotonic() + policy.timeout_s
    timeout = aiohttp.ClientTimeout(total=min(120.0, policy.timeout_s), sock_connect=10)
    try:
        async with aiohttp.ClientSession(timeout=timeout, headers=_headers(api_key)) as s:
            async with s.post(jobs_url, json=body) as r:
                job = await _json(r, f"{kind} job submission")
            job_id = job.get("id")
            if not isinstance(job_id, str) or not job_id:
                raise LlmError(f"{kind} job submission: the answer has no job id")
            delay = policy.poll_initial_s
            while job.get("status") in RUNNING or "status" not in job:
                if time.monotonic() + delay > deadline:
                    raise LlmError(f"{kind} job {job_id} did not finish within {policy.timeout_s:g} s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, policy.poll_max_s)
                async with s.get(f"{jobs_url}/{quote(job_id, safe='')}") as r:
                    job = await _json(r, f"{kind} job status")
            if job.get("status") != "succeeded":
                raise LlmError(f"{kind} job {job_id} {job.get('status')}: {str(job.get('error') or 'no reason given')[:300]}")
            return await _download(s, base_url, kind, job_id, job.get("output"), policy.max_bytes)
    except aiohttp.ClientError as exc:
        raise LlmError(f"{kind} generation failed: {type(exc).__name__}: {exc}") from exc
    except TimeoutError:
        raise LlmError(f"{kind} generation timed out")


async def _download(s: aiohttp.ClientSession, base_url: str, kind: str, job_id: str, output: Any, max_bytes: int) -> MediaResult:
    if not isinstance(output, dict) or not isinstance(output.get("url"), str):
        raise LlmError(f"{kind} job {job_id} succeeded without output.url")
    url = urljoin(base_url.rstrip("/") + "/", output["url"])
    base, target = urlsplit(base_url), urlsplit(url)
    if (target.scheme, target.netloc) != (base.scheme, base.netloc):
        raise LlmError(f"{kind} job {job_id}: the output must be served by the provider itself")
    async with s.get(url, allow_redirects=False) as r:
        if r.status >= 400:
            raise LlmError(f"{kind} download: HTTP {r.status}", status=r.status)
        body = bytearray()
        async for chunk in r.content.iter_chunked(64 * 1024):
            body.extend(chunk)
            if len(body) > max_bytes:
                raise LlmError(f"{kind} output is larger than {max_bytes} bytes")
        content_type = str(output.get("contentType") or r.headers.get("Content-Type") or "application/octet-stream")
    if not body:
        raise LlmError(f"{kind} output is empty")
    return MediaResult(bytes(body), content_type.split(";")[0].strip().lower(), job_id)
