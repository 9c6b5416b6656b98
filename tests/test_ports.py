"""The kernel's named ports (platform_server/ports): today's implementations, installed at startup, do what the areas relied on."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, Callable

import apsw
import pytest
import peewee

from platform_server.db import database, utcnow
from platform_server.features.settings.models import Setting
from platform_server.memo import memo_on
from platform_server.ports import changes
from platform_server.ports import database as database_port
from platform_server.ports import events, leader
from platform_server.ports import files as file_store
from platform_server.web.events import EventHub, Topics
from tests.helpers.chat import ChatEnv, chat_env, names, text_of
from tests.helpers.cron import make_job, runs, scheduler, utc
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.test_chat import open_stream
from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer, create_personas, start_server
from tests.helpers.wiki import KB, make_kb, restart, use_fake_wiki_models


async def test_the_server_opens_its_sqlite_file_through_the_database_port_and_leaves_it_complete_at_stop(tmp_path: Any) -> None:
    running = await start_server(str(tmp_path / "data"))
    store = database_port.current()
    assert isinstance(store, database_port.SqliteDatabase) and store.path == running.config.db_path
    assert store.files() == [running.config.db_path + s for s in ("", "-wal", "-shm")]
    await create_personas(running.client)  # writes
    assert os.path.getsize(running.config.db_path + "-wal") > 0 or os.path.getsize(running.config.db_path) > 0
    await running.stop()
    wal = Path(running.config.db_path + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # flushed: the file alone holds everything


async def test_a_snapshot_of_the_live_database_passes_the_ports_integrity_check_and_garbage_does_not(
        server: RunningServer, tmp_path: Any) -> None:
    target = str(tmp_path / "copy.db")
    database_port.current().snapshot(target, 1000)
    assert database_port.current().check_copy(target) == "ok"
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    assert database_port.current().check_copy(str(garbage)) != "ok"
    missing = database_port.SqliteDatabase(str(tmp_path / "none.db"))
    try:
        missing.snapshot(str(tmp_path / "x.db"), 10)
        raise AssertionError("a snapshot of no database succeeded")
    except database_port.SnapshotFailed as exc:
        assert "no database at" in str(exc)
    assert not os.path.exists(tmp_path / "none.db")


def test_storage_faults_are_classified_by_the_installed_port_through_peeweees_wrapping() -> None:
    def wrapped(inner: BaseException) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as exc:
                raise peewee.OperationalError(exc) from exc
        except peewee.OperationalError as outer:
            return outer

    assert database_port.storage_fault(wrapped(apsw.BusyError("database is locked"))) == "busy"
    assert database_port.storage_fault(wrapped(apsw.FullError("database or disk is full"))) == "full"
    assert database_port.storage_fault(wrapped(apsw.IOError("disk I/O error"))) == "io"
    assert database_port.storage_fault(ValueError("no")) is None

    class Never(database_port.SqliteDatabase):
        def fault(self, exc: BaseException | None) -> database_port.StorageFault | None:
            return None

    before = database_port.current()
    database_port.use(Never(""))
    try:
        assert database_port.storage_fault(wrapped(apsw.FullError("database or disk is full"))) is None
    finally:
        database_port.use(before)


_settings_reads: list[str] = []


@memo_on(Setting)
def _setting(key: str) -> object:
    _settings_reads.append(key)
    row = Setting.get_or_none(Setting.key == key)
    return None if row is None else row.value


class FrozenFeed(changes.SqliteHookFeed):
    """A feed that reports no change at all (what a cache sees when its feed misses another process's writes)."""

    def __init__(self) -> None:
        self.subscribed: list[str] = []

    def subscribe(self, table: str) -> None:
        self.subscribed.append(table)

    def versions(self, tables: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(0 for _ in tables)


async def test_caches_are_dropped_when_the_change_feed_says_their_table_moved_and_only_then(api: ApiClient, people: dict) -> None:
    before = changes.version("setting")
    r = await api.put("/api/v1/settings", {"language": "zh-CN"}, token="alice")
    assert r.status == 200, r.body
    assert changes.version("setting") > before  # the HTTP write moved the table's version
    _settings_reads.clear()
    assert _setting("language") == _setting("language") and len(_settings_reads) == 1
    await api.put("/api/v1/settings", {"language": "en-US"}, token="alice")
    _setting("language")
    assert len(_settings_reads) == 2  # dropped after the write
    installed = changes.current()
    frozen = FrozenFeed()
    changes.use(frozen)
    try:
        assert {"setting", "auth_epoch", "wiki_page"} <= set(frozen.subscribed)  # what modules subscribed at import
        _setting("language")
        await api.put("/api/v1/settings", {"language": "zh-CN"}, token="alice")
        _setting("language")
        assert len(_settings_reads) == 3  # the feed reported nothing: the kept value stands
    finally:
        changes.use(installed)


class RecordingHub(EventHub):
    def __init__(self, name: str) -> None:
        super().__init__(keep=True)
        self.name = name
        self.subscribed_after: list[int] = []

    def subscribe(self, after_id: int = 0) -> events.Subscription:
        self.subscribed_after.append(after_id)
        return super().subscribe(after_id)


class RecordingBus(events.LocalEventBus):
    """Today's bus, remembering what the areas opened on it."""

    def __init__(self) -> None:
        self.streams: list[RecordingHub] = []
        self.topic_names: list[str] = []

    def stream(self, name: str, keep: bool = True) -> events.Stream:
        hub = RecordingHub(name)
        self.streams.append(hub)
        return hub

    def topics(self, name: str) -> events.TopicBus[Any]:
        self.topic_names.append(name)
        return Topics()


async def test_a_chat_turn_streams_and_replays_through_the_installed_event_bus(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    before = events.current()
    bus = RecordingBus()
    events.use(bus)
    running = await start_server(str(tmp_path / "data"))
    try:
        assert {"wiki-progress", "memory"} <= set(bus.topic_names)  # the areas' topics come from the bus
        env = await chat_env(running.client, await create_personas(running.client), llm)
        llm.enqueue(Script(text=[f"w{i} " for i in range(8)], delay_s=0.05))
        r, it = await open_stream(env, {"agentId": env.agent_id, "conversationId": "c1", "message": "go"})
        first = []
        async for ev in it:
            first.append(ev)
            if len(first) == 3:
                break
        r.close()
        rest = await env.stream(conversation_id="c1", reconnect=True, lastEventId=str(first[-1].id))
        assert text_of(first + rest) == "".join(f"w{i} " for i in range(8)) and names(rest)[-1] == "done"
        [turn_stream] = [s for s in bus.streams if s.name.startswith("chat-turn:")]
        assert [e.id for e in turn_stream.history] == [e.id for e in first + rest]  # every event went through the bus
        assert first[-1].id in turn_stream.subscribed_after  # the re-attach replayed from the bus's stream
    finally:
        await running.stop()
        events.use(before)


class Follower:
    """A lock held by another process."""

    def is_leader(self) -> bool:
        return False


async def test_a_due_cron_job_does_not_fire_while_the_leader_lock_says_another_process_leads(env: ChatEnv, server: RunningServer) -> None:
    job = await make_job(env.api, env.agent_id, message="Summarize the news")
    sched = scheduler(server)
    sched.clock = lambda: utc(job["nextFireTime"])  # the scheduled run's clock: the job is due
    env.llm.enqueue(Script(text="Here is the news."))
    before = leader.current()
    leader.use(Follower())
    try:
        assert await sched.run_scheduled() is False
        assert (await runs(env.api))["total"] == 0
        assert await server.platform.services.memory_extraction.run_scheduled() is False  # every shared loop asks
        assert await server.platform.services.chat_prune.run_scheduled() is True  # this process's own housekeeping runs
    finally:
        leader.use(before)
    assert leader.is_leader() and await sched.run_scheduled() is True  # this process leads again: the job fires
    await sched.drain()
    page = await runs(env.api)
    assert page["total"] == 1 and page["records"][0]["status"] == "succeeded"


async def test_areas_put_agent_workspaces_and_wiki_folders_where_the_file_store_says(
        api: ApiClient, people: dict, server: RunningServer, tmp_path: Any) -> None:
    store = file_store.current()
    assert store.root == Path(server.config.data_dir).resolve()
    for bad in ("..", ".", "", "a/b", "a\\b", "x\x00"):
        with pytest.raises(ValueError):
            store.path("agents", bad)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    file_store.use(file_store.LocalFileStore(str(moved)))  # e.g. a shared volume
    try:
        r = await api.post("/api/v1/agents", {"name": "Filer", "systemPrompt": "You are Filer."}, token="bob")
        assert r.status == 200, r.body
        r = await api.put(f"/api/v1/agents/{r.data['id']}/workspace/files/notes.md", {"content": "kept"}, token="bob")
        assert r.status == 200, r.body
        [written] = moved.glob("agents/*/workspace/notes.md")
        assert written.read_text() == "kept"
        assert not list(Path(server.config.data_dir).glob("agents/*/workspace/notes.md"))
    finally:
        file_store.use(store)


# ---- contracts: each implementation of a port passes these (issue 31 adds its own to the dicts) ----

EVENT_BUSES: dict[str, Callable[[], events.EventBus]] = {"in-process": events.LocalEventBus}
CHANGE_FEEDS: dict[str, Callable[[], changes.ChangeFeed]] = {"sqlite-hooks": changes.SqliteHookFeed}
FILE_STORES: dict[str, Callable[[str], file_store.FileStore]] = {"local": file_store.LocalFileStore}


@pytest.mark.parametrize("make", EVENT_BUSES.values(), ids=list(EVENT_BUSES))
async def test_contract_a_stream_replays_after_an_event_id_then_goes_live_and_ends_at_close(make: Callable[[], events.EventBus]) -> None:
    stream = make().stream("chat-turn:contract", keep=True)
    stream.publish("a", {"n": 1}, event_id=1)
    stream.publish("b", {"n": 2}, event_id=2)
    sub = stream.subscribe(after_id=1)
    assert [(e.name, e.id) for e in sub.replay] == [("b", 2)]
    stream.publish("c", {"n": 3}, event_id=3)
    live = await sub.next()
    assert live is not None and (live.name, live.data, live.id) == ("c", {"n": 3}, 3)
    stream.close()
    assert await sub.next() is None and stream.closed
    late = stream.subscribe(after_id=0)  # a reader attaching after the end gets everything kept, then the end
    assert [e.id for e in late.replay] == [1, 2, 3] and await late.next() is None


@pytest.mark.parametrize("make", EVENT_BUSES.values(), ids=list(EVENT_BUSES))
async def test_contract_a_topic_reader_gets_its_keys_events_until_it_leaves(make: Callable[[], events.EventBus]) -> None:
    topics = make().topics("contract")
    mine, other = topics.subscribe(1), topics.subscribe(2)
    topics.publish(1, "step", {"k": 1})
    got = await mine.next()
    assert got is not None and got.data == {"k": 1} and other.queued() == []
    mine.close()
    assert topics.subscribers(1) == [] and topics.subscribers(2) == [other]
    topics.publish(1, "step", {"k": 2})  # nobody listens: dropped, no error
    topics.close()
    assert await other.next() is None


@pytest.mark.parametrize("make", CHANGE_FEEDS.values(), ids=list(CHANGE_FEEDS))
async def test_contract_a_tables_version_moves_with_a_write_again_at_its_commit_and_with_a_rollback(
        make: Callable[[], changes.ChangeFeed], server: RunningServer) -> None:
    feed = make()
    feed.subscribe("setting")
    assert feed.settled()
    [start] = feed.versions(("setting",))
    with database.atomic():
        Setting.insert(key="contract.k", value=1, update_time=utcnow()).on_conflict_replace().execute()
        [written] = feed.versions(("setting",))
        assert written > start and not feed.settled()  # inside a transaction nothing read may be kept
    [committed] = feed.versions(("setting",))
    assert committed > written  # a read cached between the write and its commit is dropped
    with pytest.raises(RuntimeError):
        with database.atomic():
            Setting.insert(key="contract.k2", value=2, update_time=utcnow()).execute()
            raise RuntimeError("roll back")
    assert feed.versions(("setting",))[0] > committed and feed.settled()


@pytest.mark.parametrize("make", FILE_STORES.values(), ids=list(FILE_STORES))
def test_contract_a_store_names_folders_inside_its_root_only(make: Callable[[str], file_store.FileStore], tmp_path: Any) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    store = make(str(tmp_path / "link"))
    assert store.root == (tmp_path / "real").resolve()
    assert store.path("wiki", 42, "raw") == store.root / "wiki" / "42" / "raw" and not (store.root / "wiki").exists()
    for bad in ("..", ".", "", "a/b", "a\\b", "x\x00"):
        with pytest.raises(ValueError):
            store.path("agents", bad)


async def test_a_folder_watcher_on_a_process_that_does_not_lead_holds_its_scan_for_the_leader(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Any) -> None:
    root = tmp_path / "roots"
    notes = root / "notes"
    notes.mkdir(parents=True)
    (notes / "plants.md").write_text("# Plants\n\nPlants turn light into sugar.\n")
    server = await restart(server, wiki_source_roots=f"1:{root}", wiki_watch_check_s=3600)
    try:
        api = server.client
        await use_fake_wiki_models(api, llm.url)
        kb = await make_kb(api)
        watchers = server.platform.services.wiki.watchers
        before = leader.current()
        leader.use(Follower())
        try:
            r = await api.put(f"{KB}/{kb}/source-directory", {"path": str(notes)}, token="bob")
            assert r.status == 200, r.body
            watcher = watchers.get(int(kb))
            assert watcher is not None and watcher.deferred == "link" and not watcher.scanning  # no scan started here
            assert await watchers.health.run_scheduled() is False  # the folder check is the leader's too
        finally:
            leader.use(before)
        assert await watchers.health.run_scheduled() is True  # leading now: the held scan runs
        for _ in range(200):
            rows = (await api.get(f"{KB}/{kb}/raw", token="bob")).data
            if any(row["sourcePath"] == "plants.md" for row in rows):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the held scan did not run")
        assert watcher.deferred is None
    finally:
        await server.stop()
