"""`platform-server backup FILE` while the server runs, `restore FILE` into a new data dir."""
from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import aiohttp
import pytest

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


@pytest.mark.parametrize(("name", "magic"), [("b.tar.zst", b"\x28\xb5\x2f\xfd"), ("b.tar", None), ("b.tar.gz", b"\x1f\x8b")])
async def test_the_archive_name_picks_the_compression_and_restore_reads_each(
        env: ChatEnv, server: RunningServer, tmp_path: Any, name: str, magic: bytes | None) -> None:
    assert text_of(await env.stream("kept in every format", conversation_id="fmt")) == "Echo: kept in every format"
    archive = tmp_path / name
    done = cli("backup", str(archive), "--data-dir", server.config.data_dir)
    assert done.returncode == 0, done.stderr
    head = archive.read_bytes()[:512]
    if magic is None:  # a plain tar: its first member's header, ustar magic at offset 257
        assert head[257:262] == b"ustar"
    else:
        assert head.startswith(magic)
    target = tmp_path / "restored"
    done = cli("restore", str(archive), "--data-dir", str(target))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(target / "platform.db") as conn:
        assert conn.execute("SELECT count(*) FROM conversation WHERE conversation_id = 'fmt'").fetchone() == (1,)


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


def cli_umask(umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "platform_server", *args], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                          preexec_fn=lambda: os.umask(umask))


async def test_a_backup_never_writes_through_a_planted_partial_and_is_0600_whatever_the_umask(
        server: RunningServer, tmp_path: Any) -> None:
    archive = tmp_path / "b.tar.gz"
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    victim.chmod(0o644)
    os.symlink(victim, str(archive) + ".partial")  # planted by someone who can write the backup folder
    done = cli_umask(0, "backup", str(archive), "--data-dir", server.config.data_dir)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "not yours"
    assert not archive.is_symlink() and (archive.stat().st_mode & 0o777) == 0o600
    with tarfile.open(archive, "r:gz") as tar:
        assert "platform.db" in tar.getnames()
    os.unlink(str(archive) + ".partial")
    (tmp_path / "b.tar.gz.partial").write_bytes(b"")  # a stale partial, world-readable, from an old run
    os.chmod(tmp_path / "b.tar.gz.partial", 0o644)
    archive.unlink()
    done = cli_umask(0o002, "backup", str(archive), "--data-dir", server.config.data_dir)
    assert done.returncode == 0, done.stderr
    assert (archive.stat().st_mode & 0o777) == 0o600 and (tmp_path / "b.tar.gz.partial").read_bytes() == b""


def hostile(path: Path, base: Path, add: Any) -> Path:
    """The good archive `base` with `add(tar)` appending members."""
    with tarfile.open(base, "r:gz") as src, tarfile.open(path, "w:gz") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        add(dst)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x", link: str = "") -> Any:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return add


async def test_restore_refuses_links_devices_escaping_paths_oversize_and_garbage_without_a_traceback(
        server: RunningServer, tmp_path: Any) -> None:
    good = tmp_path / "good.tar.gz"
    assert cli("backup", str(good), "--data-dir", server.config.data_dir).returncode == 0
    cases = {
        "symlink": member("files/agents/1/evil", tarfile.SYMTYPE, link="/etc/passwd"),
        "hard link": member("files/agents/1/evil", tarfile.LNKTYPE, link="platform.db"),
        "device": member("files/dev", tarfile.CHRTYPE),
        "fifo": member("files/fifo", tarfile.FIFOTYPE),
        "unsafe": member("files/../../escaped.txt"),
        "absolute": member("/tmp/escaped.txt"),
    }
    for i, (what, add) in enumerate(cases.items()):
        bad = hostile(tmp_path / f"bad{i}.tar.gz", good, add)
        target = tmp_path / f"r{i}"
        done = cli("restore", str(bad), "--data-dir", str(target))
        assert done.returncode != 0 and "Traceback" not in done.stderr and "refused" in done.stderr, (what, done.stderr)
        assert what.split()[0] in done.stderr or "unsafe" in done.stderr, (what, done.stderr)
        assert not (target / "platform.db").exists() and not (tmp_path / "escaped.txt").exists()
        assert not list(tmp_path.glob(".platform-restore-*")), "the staging folder is removed"
    (tmp_path / "garbage.tar.gz").write_bytes(os.urandom(5000))
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    for path in (tmp_path / "garbage.tar.gz", truncated, tmp_path / "absent.tar.gz"):
        done = cli("restore", str(path), "--data-dir", str(tmp_path / "g"))
        assert done.returncode != 0 and "Traceback" not in done.stderr and "refused" in done.stderr, done.stderr
    small = subprocess.run([sys.executable, "-m", "platform_server", "restore", str(good), "--data-dir", str(tmp_path / "s")],
                           capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
                                "PLATFORM_RESTORE_MAX_BYTES": "65536"})
    assert small.returncode != 0 and "restore_max_bytes" in small.stderr and "Traceback" not in small.stderr, small.stderr
    assert not (tmp_path / "s" / "platform.db").exists()


async def test_restore_refuses_an_archive_whose_manifest_or_rows_name_a_missing_file(
        env: ChatEnv, server: RunningServer, tmp_path: Any) -> None:
    form = aiohttp.FormData()
    form.add_field("conversationId", "c1")
    form.add_field("file", b"attached", filename="notes.txt", content_type="text/plain")
    r = await env.api.post("/api/v1/chat/upload", data=form, token="alice")
    assert r.status == 200, r.body
    (Path(server.config.data_dir) / "agents" / env.agent_id / "workspace" / "notes.txt").write_text("kept")
    archive = tmp_path / "b.tar.gz"
    assert cli("backup", str(archive), "--data-dir", server.config.data_dir).returncode == 0
    with tarfile.open(archive, "r:gz") as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    upload_file = next(f["path"] for f in manifest["files"] if f["path"].startswith("uploads/"))
    assert manifest["referenced"] == [upload_file]

    for i, gone in enumerate((f"files/agents/{env.agent_id}/workspace/notes.txt", f"files/{upload_file}")):
        cut = tmp_path / f"cut{i}.tar.gz"
        with tarfile.open(archive, "r:gz") as src, tarfile.open(cut, "w:gz") as dst:
            for m in src.getmembers():
                if m.name != gone:
                    dst.addfile(m, src.extractfile(m))
        done = cli("restore", str(cut), "--data-dir", str(tmp_path / f"r{i}"))
        assert done.returncode != 0 and "lacks" in done.stderr, done.stderr
        assert not (tmp_path / f"r{i}" / "platform.db").exists()
    done = cli("restore", str(archive), "--data-dir", str(tmp_path / "ok"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ok" / upload_file).read_bytes() == b"attached"


async def test_restore_refuses_a_damaged_manifest_without_a_traceback(server: RunningServer, tmp_path: Any) -> None:
    archive = tmp_path / "b.tar.gz"
    assert cli("backup", str(archive), "--data-dir", server.config.data_dir).returncode == 0
    for i, (key, value) in enumerate((("migrations", 7), ("referenced", {"a": 1}), ("files", "all"), ("files", [3]))):
        def damage(name: str, data: bytes, key: str = key, value: Any = value) -> bytes:
            if name != "manifest.json":
                return data
            manifest = json.loads(data)
            manifest[key] = value
            return json.dumps(manifest).encode()

        rewrite(archive, tmp_path / f"d{i}.tar.gz", damage)
        done = cli("restore", str(tmp_path / f"d{i}.tar.gz"), "--data-dir", str(tmp_path / f"r{i}"))
        assert done.returncode != 0 and "refused" in done.stderr and "Traceback" not in done.stderr, (key, done.stderr)
        assert not (tmp_path / f"r{i}" / "platform.db").exists()
