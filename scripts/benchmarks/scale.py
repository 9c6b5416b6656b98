"""`scripts/bench --scale 1,10,100`: how the interactive routes, restart and backup grow with the data.

Each multiplier m seeds a fresh data dir in bulk, not through the API: m x 1,000 conversations holding
m x 10,000 messages (one of them holds a tenth, for "a conversation's latest 50"), m x 10 agents, and a
database padded to 100 MB (1x), 1 GB (10x) or 5 GB (100x). Rows go straight into the models' tables with
ids from the project's generator, one transaction per batch, while no server runs. Then a server starts
on it and each route is timed beside the same query in raw SQLite (restart beside a bare Tornado app,
backup beside a file copy), so the report shows growth as a ratio. Wiki chunks (m x 1,000) go through
the wiki-search step's own filler (wiki_search.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import peewee

from platform_server.ids import next_id
from scripts.benchmarks.procs import ADMIN, Proc, bare_proc, platform_proc, python, rss_mb
from scripts.benchmarks.report import fmt

HEALTH = "/api/v1/system/health"
PAGE_SIZE = 20
LATEST = 50
DB_BYTES = {1: 100 * 2**20, 10: 2**30, 100: 5 * 2**30}
TARGET_P95_MS = 50.0
BATCH = 5_000


@dataclass(frozen=True)
class Sizes:
    conversations: int
    messages: int
    agents: int
    chunks: int
    db_bytes: int  # 0: no padding

    @staticmethod
    def of(m: int) -> Sizes:
        return Sizes(1_000 * m, 10_000 * m, 10 * m, 1_000 * m, DB_BYTES.get(m, 100 * 2**20 * m))


@dataclass
class Seeded:
    user_id: int
    conversation_ids: list[str]
    big_conversation: str  # the one holding a tenth of the messages
    needle: str  # a word in exactly one message (of a conversation whose title lacks it)
    needle_conversation: str
    words: list[str]
    db_mb: float = 0.0
    steps: str = ""  # seconds per seeding step


@dataclass
class Timing:
    p50_ms: float
    p95_ms: float
    samples: list[float] = field(default_factory=list)


def timing(samples: list[float]) -> Timing:
    s = sorted(samples)
    return Timing(statistics.median(s), s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))], s)


# ---- seeding ----------------------------------------------------------------------------------


def _template(model: type[peewee.Model]) -> tuple[str, list[str], dict[str, Any]]:
    """The INSERT for a model's table and each column's stored default (callables called once)."""
    fields = model._meta.sorted_fields  # type: ignore[attr-defined]
    cols = [f.column_name for f in fields]
    defaults = {}
    for f in fields:
        value = f.default() if callable(f.default) else f.default
        defaults[f.column_name] = f.db_value(value) if value is not None else None
    sql = f'INSERT INTO "{model._meta.table_name}" ({", ".join(cols)}) VALUES ({", ".join("?" * len(cols))})'  # type: ignore[attr-defined]
    return sql, cols, defaults


class _Writer:
    """Rows of one model in its column order, written BATCH at a time (the caller holds one transaction)."""

    def __init__(self, con: sqlite3.Connection, model: type[peewee.Model]) -> None:
        self.con = con
        self.sql, self.cols, self.defaults = _template(model)
        self.pending: list[tuple[Any, ...]] = []
        self.count = 0

    def add(self, row: dict[str, Any]) -> None:
        d = self.defaults
        self.pending.append(tuple(row[c] if c in row else d[c] for c in self.cols))
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.con.executemany(self.sql, self.pending)
            self.count += len(self.pending)
            self.pending = []


def _insert(con: sqlite3.Connection, model: type[peewee.Model], rows: list[dict[str, Any]]) -> None:
    w = _Writer(con, model)
    for r in rows:
        w.add(r)
    w.flush()


class Steps:
    """Seconds per seeding step, for the run's notes."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []
        self._at = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.times.append((name, now - self._at))
        self._at = now

    def text(self) -> str:
        return ", ".join(f"{name} {s:.1f} s" for name, s in self.times)


def _fts_triggers(con: sqlite3.Connection, tables: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, sql) of the FTS-maintaining triggers on these tables: dropped while seeding, re-created after."""
    marks = ",".join("?" * len(tables))
    return [(str(n), str(q)) for n, q in con.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ({marks}) AND sql LIKE '%fts%'", tables)]


def seed(db_path: str, sizes: Sizes, seed_value: int = 7) -> Seeded:
    """Agents, conversations and messages for the admin in workspace 1, inserted directly in raw SQLite.

    No server uses the database yet, so it is written without a journal or fsync in one transaction, with
    the FTS triggers dropped: the keyword indexes (message text, conversation titles) are built once from
    the rows ('rebuild', what the migrations do), then the triggers come back, so the padding after it and
    every later write keep the indexes in step exactly as the server's own writes do."""
    from platform_server.db import stored_time
    from platform_server.features.agents.models import Agent
    from platform_server.features.conversations.models import Conversation, Message

    steps = Steps()
    rng = random.Random(seed_value)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(5000)})
    con = sqlite3.connect(db_path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA cache_size=-262144")  # 256 MB: the indexes' pages stay in memory while they fill
        user_id = con.execute('SELECT id FROM "user" WHERE username = ?', (ADMIN[0],)).fetchone()[0]
        triggers = _fts_triggers(con, ("message", "conversation"))
        con.execute("BEGIN")
        for name, _ in triggers:
            con.execute(f'DROP TRIGGER "{name}"')
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        agents = [{"id": next_id(), "workspace_id": 1, "creator_user_id": user_id, "name": f"Agent {i}",
                   "description": " ".join(rng.choice(words) for _ in range(12)),
                   "create_time": stored_time(now - dt.timedelta(minutes=i)), "update_time": stored_time(now)}
                  for i in range(sizes.agents)]
        _insert(con, Agent, agents)
        agent_ids = [a["id"] for a in agents] or [None]
        n_conv = max(sizes.conversations, 2)
        big_share = sizes.messages // 10
        rest = sizes.messages - big_share
        per = [rest // (n_conv - 1) + (1 if i < rest % (n_conv - 1) else 0) for i in range(n_conv - 1)]
        per.insert(0, big_share)
        conversation_ids = []
        needle = "needlezq"
        needle_at = rng.randrange(sizes.messages)
        needle_conv = ""
        k = 0
        conv_w, msg_w = _Writer(con, Conversation), _Writer(con, Message)
        choice = rng.choice
        for c, count in enumerate(per):
            cid = next_id()
            name = f"c{cid}"
            conversation_ids.append(name)
            last = now - dt.timedelta(minutes=c * 7)
            text = ""
            for j in range(count):
                # 20 words (about 140 characters): the message lengths keyword search was measured with
                text = " ".join([choice(words) for _ in range(20)])
                if k == needle_at:
                    text, needle_conv = f"{text} {needle}", name
                k += 1
                msg_w.add({"id": next_id(), "conversation_id": cid, "role": "user" if j % 2 == 0 else "assistant",
                           "content": text, "create_time": stored_time(last - dt.timedelta(seconds=count - j))})
            conv_w.add({"id": cid, "key": name, "conversation_id": name, "user_id": user_id, "workspace_id": 1,
                        "agent_id": agent_ids[c % len(agent_ids)], "title": " ".join(choice(words) for _ in range(4)),
                        "message_count": count, "last_message": text[:100],
                        "last_active_time": stored_time(last), "create_time": stored_time(last),
                        "update_time": stored_time(last)})
        conv_w.flush()
        msg_w.flush()
        steps.done(f"{msg_w.count:,} messages and {conv_w.count:,} conversations")
        con.execute("INSERT INTO message_fts(message_fts) VALUES ('rebuild')")
        con.execute("INSERT INTO conversation_title_fts(conversation_title_fts) VALUES ('rebuild')")
        for _, sql in triggers:
            con.execute(sql)
        con.execute("COMMIT")
        steps.done("keyword indexes built")
        if sizes.db_bytes:
            _pad(con, Conversation, Message, user_id, sizes.db_bytes, rng)
            steps.done("padding")
        # the padding's rows went through the triggers: index them as the server's batches would have (message_fts_pending)
        con.execute("INSERT INTO message_fts(rowid, content) SELECT m.id, m.content FROM message_fts_pending p CROSS JOIN message m ON m.id = p.id")
        con.execute("DELETE FROM message_fts_pending")
        con.execute("PRAGMA journal_mode=WAL")
    finally:
        con.close()
    return Seeded(user_id, conversation_ids, conversation_ids[0], needle, needle_conv, words,
                  os.path.getsize(db_path) / 2**20, steps.text())


PAD_IMAGE = 2**20  # a pasted screenshot's data URL, about 1 MB


def _pad(con: sqlite3.Connection, conv_model: type[peewee.Model], msg_model: type[peewee.Model],
         user_id: int, target: int, rng: random.Random) -> None:
    """An archived conversation of pasted screenshots up to `target` bytes: few large rows, what fills a
    year-old database (images are stored inline as data URLs in contentParts). Their text is empty, so no
    keyword matches them and the route figures time the seeded messages; the base64 of random bytes
    compresses as little as a real PNG's does (backup)."""
    import base64
    import json

    cid = next_id()
    con.execute("BEGIN")
    _insert(con, conv_model, [{"id": cid, "key": f"pad{cid}", "conversation_id": f"pad{cid}", "user_id": user_id,
                               "workspace_id": 1, "title": "screenshots", "archived": 1,
                               "last_active_time": "2020-01-01 00:00:00.000"}])
    images = [json.dumps([{"type": "image", "url": "data:image/png;base64," +
                           base64.b64encode(rng.randbytes(PAD_IMAGE * 3 // 4)).decode()}]) for _ in range(8)]
    page = con.execute("PRAGMA page_size").fetchone()[0]
    w = _Writer(con, msg_model)
    count = 0
    while con.execute("PRAGMA page_count").fetchone()[0] * page < target:
        for _ in range(8):  # 8 MB a round
            w.add({"id": next_id(), "conversation_id": cid, "role": "user", "content": "", "content_parts": images[count % 8]})
            count += 1
        w.flush()
    con.execute("UPDATE conversation SET message_count = ? WHERE id = ?", (count, cid))
    con.execute("COMMIT")


# ---- measuring ----------------------------------------------------------------------------------


_PAGE_SQL = ("SELECT c.conversation_id, c.title, a.name, u.username, c.message_count, c.last_message, c.last_active_time "
             'FROM conversation c LEFT JOIN agent a ON a.id = c.agent_id LEFT JOIN "user" u ON u.id = c.user_id '
             "WHERE c.user_id = ? AND c.workspace_id = 1 ORDER BY c.pinned DESC, c.last_active_time DESC, c.id DESC "
             "LIMIT ? OFFSET ?")
_COUNT_SQL = "SELECT COUNT(*) FROM conversation WHERE user_id = ? AND workspace_id = 1"
# The route's own statement (conversations/service.page_for): the union of the two trigram matches drives
# it, each match looked up by id, and the page and its total come from it at once (a window count).
_KEYWORD_WHERE = ("WHERE c.user_id + 0 = ? AND c.workspace_id + 0 = 1 AND c.id IN (SELECT rowid FROM conversation_title_fts "
                  "WHERE conversation_title_fts MATCH ? UNION SELECT conversation_id FROM message WHERE id IN "
                  "(SELECT rowid FROM message_fts WHERE message_fts MATCH ?))")
# The query before the trigram index (conversations_0004): every message read; timed in raw SQL for the record.
_SCAN_WHERE = ("WHERE c.user_id = ? AND c.workspace_id = 1 AND (c.title LIKE ? OR c.id IN "
               "(SELECT conversation_id FROM message WHERE content LIKE ?))")
_KEYWORD_SQL = (f"SELECT c.*, m.total FROM (SELECT c.id AS id, COUNT(*) OVER () AS total FROM conversation c {_KEYWORD_WHERE} "
                "ORDER BY c.pinned DESC, c.last_active_time DESC, c.id DESC LIMIT ? OFFSET 0) m JOIN conversation c ON c.id = m.id "
                "ORDER BY c.pinned DESC, c.last_active_time DESC, c.id DESC")
_SCAN_SQL = (f"SELECT COUNT(*) FROM conversation c {_SCAN_WHERE};;SELECT c.* FROM conversation c {_SCAN_WHERE} "
             "ORDER BY c.pinned DESC, c.last_active_time DESC, c.id DESC LIMIT ? OFFSET 0")
_LATEST_SQL = ("SELECT m.* FROM message m JOIN conversation c ON c.id = m.conversation_id WHERE c.key = ? "
               "ORDER BY m.id DESC LIMIT ?")
_AGENTS_SQL = "SELECT * FROM agent WHERE workspace_id = 1 ORDER BY create_time DESC, id DESC"


def raw_times(db_path: str, calls: list[tuple[str, tuple[Any, ...]]]) -> Timing:
    """The baseline: the route's queries in raw sqlite3, each call's rows fetched."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        samples = []
        for sql, params in calls:
            started = time.perf_counter()
            for part in sql.split(";;"):
                con.execute(part, params[: part.count("?")]).fetchall()
            samples.append(1000 * (time.perf_counter() - started))
        return timing(samples)
    finally:
        con.close()


async def http_times(url: str, token: str, paths: list[str]) -> tuple[Timing, list[Any]]:
    """Each path GET once in order (the platform keeps encoded pages, so distinct paths are distinct work)."""
    samples, bodies = [], []
    async with aiohttp.ClientSession(headers={"Authorization": "Bearer " + token}) as s:
        for path in paths:
            started = time.perf_counter()
            async with s.get(url + path) as r:
                body = await r.json()
            samples.append(1000 * (time.perf_counter() - started))
            if r.status != 200:
                raise RuntimeError(f"GET {path}: {r.status} {body}")
            bodies.append(body["data"])
    return timing(samples), bodies


async def login(url: str) -> str:
    async with aiohttp.ClientSession() as s:
        async with s.post(url + "/api/v1/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}) as r:
            body = await r.json()
            if r.status != 200:
                raise RuntimeError(f"login: {body}")
            return str(body["data"]["token"])


async def start(data_dir: str, log_path: str, token: str = "") -> tuple[Proc, float, str]:
    """A platform server on data_dir, ready (health answers as the admin); returns it, seconds, token.

    With a token from an earlier start (tokens outlive a restart), only health is polled, as the main
    bench's restart row does: a login's bcrypt check is no part of a restart."""
    proc = platform_proc(data_dir, log_path)
    proc.spawn()
    if token:
        return proc, await proc.wait_ready(HEALTH, {"Authorization": "Bearer " + token}), token
    deadline = time.perf_counter() + 120
    while True:
        try:
            token = await login(proc.url)
            break
        except (aiohttp.ClientError, RuntimeError):
            if time.perf_counter() > deadline or (proc.proc and proc.proc.poll() is not None):
                proc.stop()
                raise RuntimeError(f"platform did not start; see {log_path}")
            await asyncio.sleep(0.005)
    return proc, await proc.wait_ready(HEALTH, {"Authorization": "Bearer " + token}), token


def route_calls(seeded: Seeded, sizes: Sizes, queries: int) -> dict[str, tuple[list[str], list[tuple[str, tuple[Any, ...]]]]]:
    """Per figure: the platform paths and the same queries in raw SQL."""
    rng = random.Random(3)
    pages = max(1, min(sizes.conversations // PAGE_SIZE, 50))
    page_nums = [1 + i % pages for i in range(queries)]
    keywords = [rng.choice(seeded.words) for _ in range(queries - 1)] + [seeded.needle]
    uid = seeded.user_id
    return {
        "conversations page": (
            [f"/api/v1/conversations/page?page={p}&size={PAGE_SIZE}" for p in page_nums],
            [(_COUNT_SQL + ";;" + _PAGE_SQL, (uid, PAGE_SIZE, (p - 1) * PAGE_SIZE)) for p in page_nums]),
        "keyword search": (
            [f"/api/v1/conversations/page?page=1&size={PAGE_SIZE}&keyword={k}" for k in keywords],
            [(_KEYWORD_SQL, (uid, f'"{k}"', f'"{k}"', PAGE_SIZE)) for k in keywords]),
        "keyword search before the index (raw SQL, LIKE scan, beside the indexed query)": (
            [], [(_SCAN_SQL, (uid, f"%{k}%", f"%{k}%", PAGE_SIZE)) for k in keywords[-5:]]),
        "latest 50 messages": (
            [f"/api/v1/conversations/{seeded.big_conversation}/messages?limit={LATEST}"] * queries,
            [(_LATEST_SQL, (seeded.big_conversation, LATEST + 1))] * queries),
        "agent list": (["/api/v1/agents"] * queries, [(_AGENTS_SQL, ())] * queries),
    }


@dataclass
class Figure:
    name: str
    size: str
    platform: Timing
    baseline: Timing
    target: str = f"< {TARGET_P95_MS:.0f} ms p95"

    @property
    def met(self) -> bool | None:
        return self.platform.p95_ms < TARGET_P95_MS if self.target.startswith("<") else None


async def routes(url: str, token: str, db_path: str, seeded: Seeded, sizes: Sizes, queries: int) -> list[Figure]:
    label = {"conversations page": f"{sizes.conversations:,} conversations",
             "keyword search": f"{sizes.messages:,} messages",
             "latest 50 messages": f"{sizes.messages // 10:,} in the conversation",
             "agent list": f"{sizes.agents:,} agents"}
    out = []
    figures = route_calls(seeded, sizes, queries)
    for name, (paths, calls) in figures.items():
        if not paths:  # a raw query beside the route's own: no HTTP
            before = await asyncio.to_thread(raw_times, db_path, calls)
            out.append(Figure(name, label["keyword search"], before, out[-1].baseline, "-"))
            continue
        await http_times(url, token, paths[:1])  # warm the connection and the route's first use
        ours, _ = await http_times(url, token, paths)
        base = await asyncio.to_thread(raw_times, db_path, calls)
        out.append(Figure(name, label[name], ours, base))
    return out


def backup_seconds(data_dir: str, work: str) -> tuple[float, float]:
    """`platform-server backup` of the (stopped) install beside a plain copy of its database file."""
    archive = os.path.join(work, "scale-backup.tar.zst")  # the recommended format (README)
    started = time.perf_counter()
    subprocess.run([python(), "-m", "platform_server", "--data-dir", data_dir, "backup", archive], check=True,
                   capture_output=True, env=dict(os.environ, PLATFORM_SKIP_LOCAL_MODEL="1"))
    ours = time.perf_counter() - started
    os.remove(archive)
    copy = os.path.join(work, "scale-copy.db")
    started = time.perf_counter()
    shutil.copyfile(os.path.join(data_dir, "platform.db"), copy)
    base = time.perf_counter() - started
    os.remove(copy)
    return ours, base


async def restarts(data_dir: str, work: str, runs: int, token: str) -> tuple[Timing, Timing, float, float]:
    """Restart to healthy (and idle RSS) beside a bare Tornado app answering the same health body."""
    body = os.path.join(work, "health.json")
    with open(body, "wb") as fh:
        fh.write(b'{"code":200,"msg":"success","data":{"status":"UP","database":"UP"}}')
    ours, bares, rss, bare_rss = [], [], 0.0, 0.0
    for i in range(runs):
        bare = bare_proc({HEALTH: body}, os.path.join(work, "scale-bare.log"))
        bare.spawn()
        bares.append(1000 * await bare.wait_ready(HEALTH))
        await asyncio.sleep(0.3)
        bare_rss = rss_mb(bare.pid)
        bare.stop()
        proc, seconds, _ = await start(data_dir, os.path.join(work, f"scale-restart-{i}.log"), token)
        ours.append(1000 * seconds)
        await asyncio.sleep(0.3)
        rss = rss_mb(proc.server_pid())
        proc.stop()
    return timing(ours), timing(bares), rss, bare_rss


def size_label(m: int) -> str:
    return f"{m}x"


def fmt_ms(t: Timing) -> str:
    return f"{fmt(t.p50_ms, '', 1)} / {fmt(t.p95_ms, ' ms', 1)}"


# ---- the step ---------------------------------------------------------------------------------------


@dataclass
class ScaleRun:
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


async def run_size(m: int, work: str, queries: int, restart_runs: int, run: ScaleRun, pad: bool = True) -> None:
    sizes = Sizes.of(m)
    if not pad:
        sizes = Sizes(sizes.conversations, sizes.messages, sizes.agents, sizes.chunks, 0)
    data_dir = os.path.join(work, f"scale-{m}")
    db_path = os.path.join(data_dir, "platform.db")
    try:
        first, _, _ = await start(data_dir, os.path.join(work, f"scale-{m}-first.log"))  # migrations, the admin
        first.stop()
        started = time.perf_counter()
        seeded = await asyncio.to_thread(seed, db_path, sizes)
        run.notes.append(f"{size_label(m)}: seeded {sizes.conversations:,} conversations, {sizes.messages:,} messages, "
                         f"{sizes.agents:,} agents, database {seeded.db_mb:,.0f} MB, in {time.perf_counter() - started:.0f} s "
                         f"({seeded.steps})")
        proc, _, token = await start(data_dir, os.path.join(work, f"scale-{m}.log"))
        try:
            run.figures += await routes(proc.url, token, db_path, seeded, sizes, queries)
        finally:
            proc.stop()
        ours, bare, rss, bare_rss = await restarts(data_dir, work, restart_runs, token)
        db = f"{seeded.db_mb:,.0f} MB database"
        run.figures.append(Figure("restart to healthy", db, ours, bare, "< 1,000 ms median at 1 GB" if m == 10 else "-"))
        run.figures.append(Figure("idle RSS (MB)", db, Timing(rss, rss), Timing(bare_rss, bare_rss), "-"))
        backup_s, copy_s = await asyncio.to_thread(backup_seconds, data_dir, work)
        run.figures.append(Figure("backup (ms)", db, Timing(1000 * backup_s, 1000 * backup_s),
                                  Timing(1000 * copy_s, 1000 * copy_s), "-"))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    if sizes.chunks:
        started = time.perf_counter()
        search_t, turn_t, fts_t, fill_s = await asyncio.to_thread(wiki_times, sizes.chunks, queries, work)
        run.notes.append(f"{size_label(m)}: wiki filled with {sizes.chunks:,} chunks in {fill_s:.0f} s, "
                         f"searched in {time.perf_counter() - started - fill_s:.0f} s")
        label = f"{sizes.chunks:,} chunks"
        run.figures.append(Figure("wiki search (pages + chunks, hybrid)", label, search_t, fts_t, f"< {TARGET_P95_MS:.0f} ms p95"))
        run.figures.append(Figure("a turn's wiki retrieval (passages)", label, turn_t, fts_t, f"< {TARGET_P95_MS:.0f} ms p95"))


def wiki_times(chunks: int, queries: int, work: str) -> tuple[Timing, Timing, Timing, float]:
    """One KB filled by the wiki-search step's filler; per query: the search preview's calls, a turn's
    retrieval (`retrieval.passages`, what every turn of an agent bound to the KB runs), and the baseline:
    the keyword part alone in raw FTS5 (the vector part has no SQL equivalent)."""
    import numpy as np

    from platform_server import db
    from platform_server.db import run_migrations
    from platform_server.features.models.models import MIGRATIONS as MODEL_MIGRATIONS
    from platform_server.features.wiki import retrieval, search
    from platform_server.features.wiki.kbs import embedding_model
    from platform_server.features.wiki.models import MIGRATIONS, KnowledgeBase
    from scripts.benchmarks import wiki_search

    path = os.path.join(work, "scale-wiki.db")
    db.open_database(path)
    try:
        run_migrations(MODEL_MIGRATIONS + MIGRATIONS)
        kb = KnowledgeBase.create(workspace_id=1, name="bench")
        started = time.perf_counter()
        words, vectors = wiki_search.fill(kb.id, chunks, wiki_search.DIMS)
        fill_s = time.perf_counter() - started
        model = embedding_model(kb)
        rng, nrng = random.Random(11), np.random.default_rng(11)
        searches, turns, raws = [], [], []
        raw = sqlite3.connect(path)
        for n in range(queries + 1):
            text = " ".join(rng.choice(words) for _ in range(3))
            vec = search.pack(vectors[rng.randrange(len(vectors))] + 0.3 * nrng.standard_normal(vectors.shape[1]).astype(np.float32))
            t0 = time.perf_counter()
            search.search_pages([kb.id], text, vec, 10, False)
            search.search_chunks([kb.id], text, vec, 10)
            t1 = time.perf_counter()
            retrieval.passages([kb], 0, text, {kb.id: retrieval.QueryVector(vec, model)}, 2000, lambda t: len(t) // 4)
            t2 = time.perf_counter()
            raw.execute("SELECT rowid FROM wiki_chunk_fts WHERE wiki_chunk_fts MATCH ? ORDER BY rank LIMIT 10",
                        (" OR ".join(text.split()),)).fetchall()
            t3 = time.perf_counter()
            if n:  # the first reads the KB's vectors into memory
                searches.append(1000 * (t1 - t0))
                turns.append(1000 * (t2 - t1))
                raws.append(1000 * (t3 - t2))
        raw.close()
    finally:
        db.close_database()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    return timing(searches), timing(turns), timing(raws), fill_s


def markdown(run: ScaleRun, context: list[str]) -> list[str]:
    """One table per figure: size, platform, baseline, ratio (p95 over p95)."""
    out = [BEGIN, "", "## Growth with data (`scripts/bench --scale`)", ""] + [f"- {c}" for c in context + run.notes] + [""]
    names = list(dict.fromkeys(f.name for f in run.figures))
    for name in names:
        out += [f"### {name}", "", "| Data | Platform p50 / p95 | Baseline p50 / p95 | Ratio p50 / p95 | Target | Met |",
                "|---|---|---|---|---|---|"]
        for f in (f for f in run.figures if f.name == name):
            single = f.platform.p50_ms == f.platform.p95_ms and not f.platform.samples
            ours = fmt(f.platform.p95_ms, "", 1) if single else fmt_ms(f.platform)
            base = fmt(f.baseline.p95_ms, "", 1) if single else fmt_ms(f.baseline)
            has_base = f.baseline.p95_ms == f.baseline.p95_ms and f.baseline.p95_ms > 0 and f.baseline.p50_ms > 0
            ratio = (f"x{f.platform.p95_ms / f.baseline.p95_ms:,.1f}" if single else
                     f"x{f.platform.p50_ms / f.baseline.p50_ms:,.1f} / x{f.platform.p95_ms / f.baseline.p95_ms:,.1f}") if has_base else "-"
            # restart: the median of the restarts, as the main bench's cold-start row
            met = f.met if f.target.startswith("<") and "1 GB" not in f.target else (
                f.platform.p50_ms < 1000 if "1 GB" in f.target else None)
            out.append(f"| {f.size} | {ours} | {base} | {ratio} | {f.target} | "
                       f"{'-' if met is None else 'yes' if met else 'NO'} |")
        out.append("")
    out.append(END)
    return out


BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"


def write(path: str, lines: list[str]) -> None:
    """Replace the scale section of docs/benchmarks.md (appended the first time), keeping the rest."""
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    block = "\n".join(lines)
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as fh:
        fh.write(text)


def parse_sizes(text: str) -> list[int]:
    sizes = [int(x) for x in text.split(",") if x.strip()]
    if not sizes or any(m < 1 for m in sizes):
        raise ValueError("--scale: multipliers such as 1,10,100")
    return sizes
