"""`platform-server backup FILE` while the server runs, `restore FILE` into a new data dir."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv, text_of
from tests.helpers.server import RunningServer, start_server


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "platform_server", *args], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1])})


async def test_a_backup_taken_while_serving_restores_every_conversation_into_a_new_data_dir(
        env: ChatEnv, server: RunningServer, tmp_path: Any) -> None:
    for cid in ("c1", "c2", "c3"):
        assert text_of(await env.stream(f"hello {cid}", conversation_id=cid)) == f"Echo: hello {cid}"
    (Path(server.config.data_dir) / "agents" / env.agent_id / "workspace" / "notes.txt").write_text("kept")
    archive = tmp_path / "backup.tar.gz"
    done = cli("backup", str(archive), "--data-dir", server.config.data_dir)  # the server keeps running
    assert done.returncode == 0, done.stderr
    assert (archive.stat().st_mode & 0o777) == 0o600
    target = tmp_path / "restored"
    done = cli("restore", str(archive), "--data-dir", str(target))
    assert done.returncode == 0, done.stderr
    again = cli("restore", str(archive), "--data-dir", str(target))
    assert again.returncode != 0 and "already holds a database" in again.stderr
    restored = await start_server(str(target))
    try:
        restored.client.tokens.update(env.api.tokens)  # the JWT secret came along
        r = await restored.client.get("/api/v1/conversations", token="alice")
        assert r.status == 200, r.body
        assert {c["conversationId"] for c in r.data} >= {"c1", "c2", "c3"}
        r = await restored.client.get(f"/api/v1/agents/{env.agent_id}/workspace/files/notes.txt", token="alice")
        assert r.raw == b"kept"
        events = await restored.client.sse("POST", "/api/v1/chat/stream", {
            "agentId": env.agent_id, "conversationId": "c4", "message": "after restore"}, token="alice")
        assert text_of(events) == "Echo: after restore"  # the sealed provider key still opens
    finally:
        await restored.stop()


def rewrite(archive: Path, out: Path, change: Any) -> None:
    with tarfile.open(archive, "r:gz") as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
            data = change(member.name, data)
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))


async def test_restore_refuses_a_newer_schema_and_a_damaged_database(server: RunningServer, tmp_path: Any) -> None:
    archive = tmp_path / "b.tar.gz"
    assert cli("backup", str(archive), "--data-dir", server.config.data_dir).returncode == 0

    def newer(name: str, data: bytes) -> bytes:
        if name != "manifest.json":
            return data
        manifest = json.loads(data)
        manifest["migrations"].append("zz_9999_from_the_future")
        return json.dumps(manifest).encode()

    rewrite(archive, tmp_path / "newer.tar.gz", newer)
    done = cli("restore", str(tmp_path / "newer.tar.gz"), "--data-dir", str(tmp_path / "n"))
    assert done.returncode != 0 and "newer" in done.stderr and not (tmp_path / "n" / "platform.db").exists()

    def damaged(name: str, data: bytes) -> bytes:
        if name != "platform.db":
            return data
        middle = len(data) // 2
        return data[:middle] + b"\xff" * 4096 + data[middle + 4096:]

    rewrite(archive, tmp_path / "damaged.tar.gz", damaged)
    done = cli("restore", str(tmp_path / "damaged.tar.gz"), "--data-dir", str(tmp_path / "d"))
    assert done.returncode != 0 and "refused" in done.stderr and not (tmp_path / "d" / "platform.db").exists()
