"""Messages persisted per second under many concurrent chats, beside raw SQLite on the same disk."""
from __future__ import annotations

import asyncio
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass

import aiohttp

from scripts.benchmarks.streams import connector, platform_stream


@dataclass
class PersistResult:
    chats: int
    turns: int
    failed_turns: int
    messages: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0


def count_messages(db_path: str) -> int:
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30) as db:
        return int(db.execute("SELECT count(*) FROM message").fetchone()[0])


async def chat_load(base: str, token: str, agent_id: str, db_path: str, chats: int, seconds: float) -> PersistResult:
    """`chats` clients, each sending one message after another in its own conversation, for `seconds`."""
    before = count_messages(db_path)
    turns = failed = 0
    tag = uuid.uuid4().hex[:8]

    async def client(i: int, session: aiohttp.ClientSession, until: float) -> None:
        nonlocal turns, failed
        while time.perf_counter() < until:
            sample = await platform_stream(session, base, token, agent_id, f"persist-{tag}-{i}")
            turns += 1
            failed += not sample.ok

    async with aiohttp.ClientSession(connector=connector(), timeout=aiohttp.ClientTimeout(total=120)) as s:
        start = time.perf_counter()
        await asyncio.gather(*(client(i, s, start + seconds) for i in range(chats)))
        elapsed = time.perf_counter() - start
    return PersistResult(chats, turns, failed, count_messages(db_path) - before, elapsed)


def sqlite_baseline(platform_db: str, work_dir: str, seconds: float) -> float:
    """Rows/s of the same message write (insert + conversation update, one transaction each), raw sqlite3."""
    with sqlite3.connect(platform_db) as src:
        ddl = [row[0] for row in src.execute(
            "SELECT sql FROM sqlite_master WHERE name IN ('conversation','message') AND sql IS NOT NULL")]
    path = os.path.join(work_dir, "baseline.db")
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=wal", "synchronous=normal", "foreign_keys=1", "busy_timeout=5000"):
        db.execute("PRAGMA " + pragma)
    for statement in ddl:
        db.execute(statement)
    cols = [r[1] for r in db.execute("PRAGMA table_info(conversation)")]
    values = {c: 0 for c in cols}
    values.update(id=1, key="k", conversation_id="k", title="", source="web", stream_status="idle", last_message="",
                  last_active_time="2026-01-01 00:00:00.000", create_time="2026-01-01 00:00:00.000",
                  update_time="2026-01-01 00:00:00.000")
    db.execute(f"INSERT INTO conversation ({','.join(values)}) VALUES ({','.join('?' * len(values))})", list(values.values()))
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        n += 1
        now = time.strftime("%Y-%m-%d %H:%M:%S.000")
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO message (id, conversation_id, role, content, status, prompt_tokens, completion_tokens,"
                   " create_time) VALUES (?, 1, 'assistant', ?, 'completed', 0, 0, ?)", (n + 1, "x" * 200, now))
        db.execute("UPDATE conversation SET message_count = message_count + 1, last_active_time = ?, update_time = ?,"
                   " last_message = ? WHERE id = 1", (now, now, "x" * 200))
        db.execute("COMMIT")
    rate = n / (time.perf_counter() - start)
    db.close()
    return rate
