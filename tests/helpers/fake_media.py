"""A job-style media provider (integrations/media_jobs.py protocol) that returns real small files."""
from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np
import tornado.web

from tests.helpers.server import free_port


def tone_wav(seconds: float = 0.25, rate: int = 8000, hz: float = 440.0) -> bytes:
    """A real WAV file: a sine tone."""
    from platform_server.integrations.local_speech import to_wav

    t = np.arange(int(seconds * rate)) / rate
    return to_wav((np.sin(2 * math.pi * hz * t) * 8000).astype("<i2").tobytes(), rate)


def tiny_avi(frames: int = 4, width: int = 8, height: int = 8) -> bytes:
    """A real video: uncompressed 24-bit RIFF AVI, one colour per frame."""
    size = width * height * 3

    def chunk(fourcc: bytes, data: bytes) -> bytes:
        return fourcc + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")

    def lst(kind: bytes, data: bytes) -> bytes:
        return chunk(b"LIST", kind + data)

    avih = struct.pack("<14I", 100_000, size * 10, 0, 0x10, frames, 0, 1, size, width, height, 0, 0, 0, 0)
    strh = struct.pack("<4s4sIHHIIIIIIIIhhhh", b"vids", b"DIB ", 0, 0, 0, 0, 1, 10, 0, frames, size, 0xFFFFFFFF,
                       0, 0, 0, width, height)
    strf = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, size, 0, 0, 0, 0)
    hdrl = lst(b"hdrl", chunk(b"avih", avih) + lst(b"strl", chunk(b"strh", strh) + chunk(b"strf", strf)))
    movi_frames = b"".join(chunk(b"00db", bytes([i * 60 % 256, 90, 200]) * (width * height)) for i in range(frames))
    idx = b"".join(struct.pack("<4sIII", b"00db", 0x10, 4 + i * (size + 8), size) for i in range(frames))
    body = b"AVI " + hdrl + lst(b"movi", movi_frames) + chunk(b"idx1", idx)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def triangle_glb() -> bytes:
    """A real glTF 2.0 binary: one triangle."""
    positions = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)
    gltf = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
            "buffers": [{"byteLength": len(positions)}],
            "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": len(positions)}],
            "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                           "min": [0, 0, 0], "max": [1, 1, 0]}]}
    text = json.dumps(gltf).encode()
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<I4s", len(text), b"JSON") + text + struct.pack("<I4s", len(positions), b"BIN\0") + positions
    return b"glTF" + struct.pack("<II", 2, 12 + len(chunks)) + chunks


OUTPUTS = {"video": ("video/x-msvideo", tiny_avi), "music": ("audio/wav", tone_wav),
           "model3d": ("model/gltf-binary", triangle_glb)}


class FakeMediaProvider:
    """Jobs run for `polls_until_done` status polls, then succeed (or fail when `fail_with` is set)."""

    def __init__(self, polls_until_done: int = 2) -> None:
        self.polls_until_done = polls_until_done
        self.fail_with: str | None = None
        self.submitted: list[tuple[str, dict[str, Any], str | None]] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.output_url: str | None = None  # override where the output is said to be
        self.port = free_port()
        provider = self

        class Jobs(tornado.web.RequestHandler):
            def post(self, kind: str) -> None:
                if kind not in OUTPUTS:
                    self.set_status(404)
                    self.finish({"error": {"message": "unknown media kind"}})
                    return
                body = json.loads(self.request.body)
                provider.submitted.append((kind, body, self.request.headers.get("Authorization")))
                job_id = f"job{len(provider.jobs) + 1}"
                provider.jobs[job_id] = {"kind": kind, "polls": 0}
                self.finish({"id": job_id, "status": "queued"})

        class Job(tornado.web.RequestHandler):
            def get(self, kind: str, job_id: str) -> None:
                job = provider.jobs[job_id]
                job["polls"] += 1
                if job["polls"] < provider.polls_until_done:
                    self.finish({"id": job_id, "status": "running"})
                elif provider.fail_with:
                    self.finish({"id": job_id, "status": "failed", "error": provider.fail_with})
                else:
                    content_type = OUTPUTS[kind][0]
                    url = provider.output_url or f"/v1/media/{kind}/jobs/{job_id}/output"
                    self.finish({"id": job_id, "status": "succeeded", "output": {"url": url, "contentType": content_type}})

        class Output(tornado.web.RequestHandler):
            def get(self, kind: str, job_id: str) -> None:
                content_type, make = OUTPUTS[kind]
                self.set_header("Content-Type", content_type)
                self.finish(make())

        self.server = tornado.web.Application([
            (r"/v1/media/(\w+)/jobs", Jobs), (r"/v1/media/(\w+)/jobs/(\w+)", Job),
            (r"/v1/media/(\w+)/jobs/(\w+)/output", Output),
        ]).listen(self.port, "127.0.0.1")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.server.stop()
