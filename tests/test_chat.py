"""Streamed chat: events, tools, reconnect, stop, interrupt, busy, ownership, iterations."""
from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from tests.helpers.chat import ChatEnv, chat_env, make_agent, names, text_of
from tests.helpers.client import ApiClient, iter_sse
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall


async def open_stream(env: ChatEnv, body: dict[str, Any], token: str = "alice") -> tuple[aiohttp.ClientResponse, Any]:
    r = await env.api.session.post(env.api.base_url + "/api/v1/chat/stream", json=body,
                                   headers={"Authorization": "Bearer " + env.api.tokens[token]})
    return r, iter_sse(r)


async def test_a_streamed_answer_arrives_as_meta_start_deltas_complete_done_with_token_counts(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=["Hel", "lo ", "there"], prompt_tokens=11, completion_tokens=3))
    events = await env.stream("hi")
    seq = [n for n in names(events) if n != "phase"]  # phases: see the live-status test
    assert seq[:2] == ["meta", "message_start"]
    assert seq[-2:] == ["message_complete", "done"]
    assert set(seq[2:-2]) == {"content_delta"}
    assert text_of(events) == "Hello there"
    ids = [e.id for e in events]
    assert all(isinstance(i, int) for i in ids) and ids == sorted(set(ids))
    done = events[-1].data
    assert done["status"] == "completed" and done["promptTokens"] == 11 and done["completionTokens"] == 3
    assert done["runtimeModel"] == "scripted" and done["runtimeProvider"] == "fake"
    assert done["messageCount"] == 2
    msgs = await env.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[0]["content"] == "hi" and msgs[0]["id"] == events[0].data["userMessageId"]
    assert msgs[1]["content"] == "Hello there" and msgs[1]["status"] == "completed"
    assert msgs[1]["promptTokens"] == 11 and msgs[1]["runtimeModel"] == "scripted"
    status = await env.api.get("/api/v1/conversations/c1/status", token="alice")
    assert status.data["streamStatus"] == "idle"


async def test_phase_events_say_what_the_turn_does_from_its_first_moment_and_the_answer_keeps_its_speed(env: ChatEnv) -> None:
    env.llm.enqueue(
        Script(tool_calls=[ScriptedToolCall("get_current_time", {"timezone": "UTC"}, id="call_1")]),
        Script(text=["It ", "is ", "time."], completion_tokens=30, delay_s=0.1),
    )
    events = await env.stream("what time is it?")
    seq = names(events)
    assert seq[:2] == ["meta", "phase"] and events[1].data == {"phase": "queued"}  # before knowledge and context work
    phases = [(e.data["phase"], e.data.get("toolName")) for e in events if e.event == "phase"]
    assert phases == [
        ("queued", None),
        ("thinking", None),
        ("calling_tool", "get_current_time"),
        ("thinking", None),
        ("writing", None),
    ]
    calling = seq.index("phase", seq.index("tool_call_started") - 1)
    assert seq[calling + 1] == "tool_call_started"  # the phase names the tool before it runs
    writing = next(i for i, e in enumerate(events) if e.event == "phase" and e.data["phase"] == "writing")
    assert seq[writing + 1] == "content_delta"
    timing = events[-1].data["timing"]
    # the first token came after a whole tool round trip; 30 tokens over ~0.2 s of writing
    assert timing["timeToFirstTokenMs"] >= 100 and 40 <= timing["tokensPerSecond"] <= 400, timing
    msgs = await env.messages()
    assert msgs[-1]["metadata"]["timing"] == timing  # stored with the message: the history shows it too
    assert "timing" not in (msgs[1]["metadata"] or {})  # the tool-calling message wrote no text


async def test_a_tool_call_round_trip_runs_the_tool_and_feeds_its_result_back(env: ChatEnv) -> None:
    env.llm.enqueue(
        Script(tool_calls=[ScriptedToolCall("get_current_time", {"timezone": "UTC"}, id="call_1")]),
        Script(text="It is time."),
    )
    events = await env.stream("what time is it?")
    seq = names(events)
    assert "tool_call_started" in seq and "tool_call_completed" in seq
    started = next(e for e in events if e.event == "tool_call_started").data
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert started["toolName"] == "get_current_time" and json.loads(started["arguments"]) == {"timezone": "UTC"}
    assert completed["success"] is True and "UTC" in completed["result"] or completed["result"]
    assert events[-1].data["status"] == "completed"
    second = env.llm.requests[-1]["messages"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["tool_call_id"] == "call_1"
    msgs = await env.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[1]["metadata"]["toolCalls"][0]["name"] == "get_current_time"


async def test_a_client_that_drops_and_reconnects_with_last_event_id_gets_exactly_the_missing_events(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=[f"w{i} " for i in range(12)], delay_s=0.05))
    r, it = await open_stream(env, {"agentId": env.agent_id, "conversationId": "c1", "message": "go"})
    first = []
    async for ev in it:
        first.append(ev)
        if len(first) == 5:
            break
    r.close()
    rest = await env.stream(conversation_id="c1", reconnect=True, lastEventId=str(first[-1].id))
    full = await env.stream(conversation_id="c1", reconnect=True, lastEventId="0")
    combined = first + rest
    assert [e.id for e in combined] == [e.id for e in full]
    assert names(combined).count("meta") == 1 and names(combined)[-1] == "done"
    assert text_of(combined) == "".join(f"w{i} " for i in range(12))


async def test_reconnect_with_nothing_running_sends_done_completed(env: ChatEnv) -> None:
    events = await env.stream(conversation_id="nothing-here", reconnect=True)
    assert names(events) == ["done"] and events[0].data["status"] == "completed"


async def test_stop_keeps_the_partial_answer_with_status_stopped(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=[f"t{i} " for i in range(200)], delay_s=0.02))
    r, it = await open_stream(env, {"agentId": env.agent_id, "conversationId": "c1", "message": "long"})
    seen = []
    async for ev in it:
        seen.append(ev)
        if sum(e.event == "content_delta" for e in seen) >= 3:
            break
    stop = await env.api.post("/api/v1/chat/c1/stop", token="alice")
    assert stop.status == 200 and stop.data == {"stopped": True}
    tail = [ev async for ev in it]
    r.close()
    assert tail[-1].event == "done" and tail[-1].data["status"] == "stopped"
    msgs = await env.messages()
    assistant = msgs[-1]
    assert assistant["status"] == "stopped"
    assert assistant["content"].startswith("t0 t1 t2") and len(assistant["content"]) < len("".join(f"t{i} " for i in range(200)))
    again = await env.api.post("/api/v1/chat/c1/stop", token="alice")
    assert again.data == {"stopped": False}


async def test_stop_needs_a_token_and_the_owner(env: ChatEnv) -> None:
    assert (await env.api.post("/api/v1/chat/c1/stop")).status == 401
    await env.stream("hi")
    r = await env.api.post("/api/v1/chat/c1/stop", token="bob")
    assert r.status == 403
    r = await env.api.post("/api/v1/chat/c1/stop", params={"token": env.api.tokens["alice"]})
    assert r.status == 200 and r.data == {"stopped": False}


async def test_interrupt_queues_a_message_that_runs_next_in_the_same_stream(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=[f"a{i} " for i in range(15)], delay_s=0.03), Script(text="second answer"))
    r, it = await open_stream(env, {"agentId": env.agent_id, "conversationId": "c1", "message": "first"})
    events = []
    async for ev in it:
        events.append(ev)
        if ev.event == "content_delta":
            q = await env.api.post("/api/v1/chat/c1/interrupt", {"message": "then this"}, token="alice")
            assert q.data == {"queued": True, "queueSize": 1}
            break
    events += [ev async for ev in it]
    r.close()
    seq = names(events)
    assert "queued_input_accepted" in seq
    assert seq.count("meta") == 2 and seq.count("done") == 1 and seq[-1] == "done"
    msgs = await env.messages()
    assert [(m["role"], m["content"]) for m in msgs if m["role"] == "user"] == [("user", "first"), ("user", "then this")]
    assert msgs[-1]["content"] == "second answer"
    idle = await env.api.post("/api/v1/chat/c1/interrupt", {"message": "x"}, token="alice")
    assert idle.data == {"queued": False, "reason": "no_active_stream"}


async def test_a_message_queued_behind_a_stopped_answer_is_kept_unanswered(env: ChatEnv) -> None:
    """An accepted follow-up is never dropped: a stop ends the turn before it, and it is stored as the
    conversation's next user message (marked `queuedWhenStopped`), as a paused turn keeps its queue."""
    env.llm.enqueue(Script(text=[f"s{i} " for i in range(200)], delay_s=0.03))
    r, it = await open_stream(env, {"agentId": env.agent_id, "conversationId": "c1", "message": "first"})
    async for ev in it:
        if ev.event == "content_delta":
            break
    q = await env.api.post("/api/v1/chat/c1/interrupt", {"message": "then this"}, token="alice")
    assert q.data == {"queued": True, "queueSize": 1}
    assert (await env.api.post("/api/v1/chat/c1/stop", token="alice")).data == {"stopped": True}
    events = [ev async for ev in it]
    r.close()
    assert events[-1].event == "done" and events[-1].data["status"] == "stopped"
    msgs = await env.messages()
    assert [(m["role"], m["status"]) for m in msgs] == [("user", "completed"), ("assistant", "stopped"), ("user", "completed")]
    assert msgs[-1]["content"] == "then this" and msgs[-1]["metadata"] == {"queuedWhenStopped": True}
    assert len(env.llm.requests) == 1  # kept, not answered


async def test_a_second_message_while_running_gets_agent_busy(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=[f"b{i} " for i in range(20)], delay_s=0.03))
    r, it = await open_stream(env, {"agentId": env.agent_id, "conversationId": "c1", "message": "first"})
    await it.__anext__()
    busy = await env.stream("second")
    assert names(busy) == ["error"] and busy[0].data["message"] == "Agent busy"
    sync = await env.api.post("/api/v1/chat", {"agentId": env.agent_id, "message": "x", "conversationId": "c1"}, token="alice")
    assert sync.body["code"] == 1002 and sync.status == 500
    rest = [ev async for ev in it]
    r.close()
    assert rest[-1].event == "done"


async def test_another_users_conversation_answers_403_on_every_per_conversation_route(env: ChatEnv) -> None:
    await env.stream("mine", conversation_id="secret")
    for method, path, body in [
        ("GET", "/api/v1/conversations/secret/messages", None),
        ("DELETE", "/api/v1/conversations/secret/messages", None),
        ("DELETE", "/api/v1/conversations/secret", None),
        ("PUT", "/api/v1/conversations/secret/title", {"title": "x"}),
        ("PUT", "/api/v1/conversations/secret/pin", {"pinned": True}),
        ("PUT", "/api/v1/conversations/secret/model", {"modelProvider": None, "modelName": None}),
        ("GET", "/api/v1/conversations/secret/status", None),
        ("GET", "/api/v1/conversations/secret/trajectory", None),
        ("POST", "/api/v1/chat/secret/stop", None),
        ("POST", "/api/v1/chat/secret/interrupt", {"message": "x"}),
    ]:
        r = await env.api.request(method, path, body, token="bob")
        assert r.status == 403, (method, path, r.status)
    events = await env.stream(conversation_id="secret", reconnect=True, token="bob")
    assert names(events) == ["error"]
    events = await env.stream("hijack", conversation_id="secret", token="bob")
    assert names(events) == ["error"]
    r = await env.api.post("/api/v1/conversations/batch-delete", {"conversationIds": ["secret"]}, token="bob")
    assert r.status == 403
    assert len(await env.messages("secret")) == 2


async def test_each_user_has_their_own_default_conversation(env: ChatEnv) -> None:
    await env.stream("alice here", conversation_id="default")
    await env.stream("bob here", conversation_id="default", token="bob")
    a = await env.messages("default")
    b = await env.messages("default", token="bob")
    assert a[0]["content"] == "alice here" and b[0]["content"] == "bob here"


async def test_max_iterations_stops_a_model_that_calls_tools_forever(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    env = await chat_env(api, people, llm, maxIterations=3)
    for _ in range(6):
        llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]))
    events = await env.stream("loop")
    assert events[-1].data["status"] == "completed"
    assert len(llm.requests) == 3
    assert "maximum of 3 iterations" in text_of(events)


async def test_validation_errors_arrive_as_error_frames(env: ChatEnv) -> None:
    cases = [
        {"agentId": env.agent_id},
        {"agentId": env.agent_id, "message": "x", "thinkingLevel": "extreme"},
        {"agentId": env.agent_id, "message": "x", "modelProvider": "fake"},
        {"agentId": "999", "message": "x"},
        {"agentId": "abc", "message": "x"},
    ]
    for body in cases:
        events = await env.api.sse("POST", "/api/v1/chat/stream", body, token="alice")
        assert names(events) == ["error"], body
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": "999", "message": "x"}, token="alice")
    assert events[0].data["code"] == 1001
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": env.agent_id, "message": "x"})
    assert events[0].data["code"] == 401


async def test_synchronous_chat_and_the_get_stream_use_the_same_runtime(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="sync answer", prompt_tokens=5, completion_tokens=2))
    r = await env.api.post("/api/v1/chat", {"agentId": env.agent_id, "message": "hi", "conversationId": "s1"}, token="alice")
    assert r.status == 200, r.body
    assert r.data["content"] == "sync answer" and r.data["status"] == "completed"
    assert r.data["promptTokens"] == 5 and r.data["toolCalls"] == []
    r = await env.api.post(f"/api/v1/agents/{env.agent_id}/chat", {"message": "again", "conversationId": "s1"}, token="alice")
    assert r.data["content"] == "Echo: again"
    events = await env.api.sse("GET", f"/api/v1/agents/{env.agent_id}/chat/stream",
                               params={"message": "via get", "conversationId": "g1", "token": env.api.tokens["alice"]})
    assert names(events)[0] == "meta" and text_of(events) == "Echo: via get"


async def test_a_failing_model_gives_an_error_event_and_keeps_the_turn_failed(env: ChatEnv) -> None:
    for _ in range(3):
        env.llm.enqueue(Script(error_status=500, error_message="model exploded"))
    events = await env.stream("hi")
    assert "error" in names(events) and events[-1].event == "done" and events[-1].data["status"] == "failed"
    msgs = await env.messages()
    assert msgs[0]["role"] == "user" and msgs[-1]["status"] == "failed"
    status = await env.api.get("/api/v1/conversations/c1/status", token="alice")
    assert status.data["streamStatus"] == "idle"


async def test_an_error_frame_has_the_same_fields_before_the_stream_and_inside_it(env: ChatEnv) -> None:
    for _ in range(3):
        env.llm.enqueue(Script(error_status=500, error_message="model exploded"))
    inside = next(e.data for e in await env.stream("hi") if e.event == "error")  # the turn failed mid-stream
    before = (await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": "999", "message": "x"}, token="alice"))[0].data
    assert {"message", "code"} <= set(before) and {"message", "code"} <= set(inside), (before, inside)
    assert before["code"] == 1001 and inside["code"] == 2001  # the spec's codes: agent not found, LLM error
    assert inside["errorId"] in inside["message"] and "model exploded" not in inside["message"]


async def test_a_viewer_can_chat_but_a_user_outside_the_workspace_cannot(env: ChatEnv) -> None:
    events = await env.stream("viewer here", token="carol", conversation_id="v1")
    assert events[-1].data["status"] == "completed"
    events = await env.stream("outsider", token="dave", conversation_id="d1")
    assert names(events) == ["error"]


async def test_plan_execute_records_a_plan_with_steps(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    env = await chat_env(api, people, llm, agentType="plan_execute")
    llm.enqueue(Script(text='["Look it up", "Write it down"]'), Script(text="found"), Script(text="written"),
                Script(text="All done."))
    events = await env.stream("do the thing")
    assert events[-1].data["status"] == "completed"
    assert text_of(events).endswith("All done.")
    plans = await api.get("/api/v1/plans", params={"agentId": env.agent_id}, token="alice")
    assert len(plans.data) == 1 and plans.data[0]["status"] == "completed"
    plan = await api.get(f"/api/v1/plans/{plans.data[0]['id']}", token="alice")
    assert [(s["description"], s["status"], s["result"]) for s in plan.data["steps"]] == [
        ("Look it up", "completed", "found"), ("Write it down", "completed", "written")]
    llm.enqueue(Script(text='["Only step"]'), Script(text="did it"), Script(text="Final."))
    r = await api.post(f"/api/v1/agents/{env.agent_id}/execute", {"task": "one more"}, token="alice")
    assert r.status == 200, r.body
    assert r.data["content"] == "Final." and r.data["plan"]["steps"][0]["result"] == "did it"
    assert (await api.get("/api/v1/plans", token="alice")).status == 400


async def test_uploads_are_readable_by_their_uploader_only_and_feed_images_to_vision_models(
    api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    from tests.helpers.models import use_fake_openai

    await use_fake_openai(api, llm.url, provider_id="vis", model="vision-model", vision=True)
    agent = await make_agent(api)
    form = aiohttp.FormData()
    form.add_field("conversationId", "img1")
    form.add_field("file", b"\x89PNG\r\n\x1a\nfake", filename="../../evil<script>.png", content_type="image/png")
    r = await api.post("/api/v1/chat/upload", data=form, token="alice")
    assert r.status == 200, r.body
    stored = r.data["storedName"]
    assert "/" not in stored and "evil" not in stored and "/" not in r.data["name"]
    own = await api.get(r.data["url"], token="alice")
    assert own.status == 200 and own.raw.startswith(b"\x89PNG")
    assert (await api.get(r.data["url"], token="bob")).status == 403
    events = await api.sse("POST", "/api/v1/chat/stream", {
        "agentId": agent, "conversationId": "img1",
        "contentParts": [{"type": "text", "text": "what is this?"}, {"type": "image", "url": r.data["url"]}],
    }, token="alice")
    assert events[-1].data["status"] == "completed"
    sent = llm.requests[-1]["messages"][-1]["content"]
    assert any(p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,") for p in sent)
    bad = await api.sse("POST", "/api/v1/chat/stream", {
        "agentId": agent, "conversationId": "img1",
        "contentParts": [{"type": "image", "url": "http://169.254.169.254/latest"}],
    }, token="alice")
    assert names(bad) == ["error"]
    msgs = await api.get("/api/v1/conversations/img1/messages", token="alice")
    assert msgs.data[0]["contentParts"][1]["url"] == r.data["url"]


async def test_uploads_are_parsed_written_and_read_off_the_event_loop(
    api: ApiClient, people: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    import python_multipart.multipart

    from platform_server.web import spool
    from tests.helpers.loop_watch import watch, watch_file_io

    use = watch_file_io(monkeypatch, "/uploads/")
    watch(monkeypatch, python_multipart.multipart, "MultipartParser", use)  # parses the body spooled to disk
    watch(monkeypatch, spool.UploadedFile, "move_to", use)  # the part's file is moved into place, not copied
    form = aiohttp.FormData()
    form.add_field("conversationId", "big")
    form.add_field("file", b"x" * 1_000_000, filename="big.bin", content_type="application/octet-stream")
    r = await api.post("/api/v1/chat/upload", data=form, token="alice")
    assert r.status == 200, r.body
    assert len((await api.get(r.data["url"], token="alice")).raw) == 1_000_000
    assert use.on_loop == [], use.on_loop
    assert sorted(use.off_loop) == ["MultipartParser", "move_to", "read_bytes"]


@pytest.mark.config(heartbeat_s=0.05)
async def test_heartbeats_flow_while_a_turn_is_quiet(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    env = await chat_env(api, people, llm)
    llm.enqueue(Script(text=["slow", " answer"], delay_s=0.3))
    r = await env.api.session.post(env.api.base_url + "/api/v1/chat/stream",
                                   json={"agentId": env.agent_id, "conversationId": "h1", "message": "x"},
                                   headers={"Authorization": "Bearer " + env.api.tokens["alice"]})
    raw = await r.read()
    assert b"event: heartbeat" in raw and b"event: done" in raw


async def test_end_user_ids_keep_memory_and_conversations_apart(env: ChatEnv, server: Any) -> None:
    from pathlib import Path

    root = Path(server.config.data_dir) / "agents" / env.agent_id / "workspace" / "memory" / "users"
    (root / "u1").mkdir(parents=True)
    (root / "u1" / "MEMORY.md").write_text("The user's name is Ada.")
    await env.stream("hello", conversation_id="e1", endUserId="u1")
    await env.stream("hello", conversation_id="e2", endUserId="u2")
    first, second = env.llm.requests[-2]["messages"][0]["content"], env.llm.requests[-1]["messages"][0]["content"]
    assert "Ada" in first and "Ada" not in second
    events = await env.stream("sneak", conversation_id="e1", endUserId="u2")
    assert names(events) == ["error"]


async def test_a_memory_file_that_is_a_symlink_is_not_followed_into_the_prompt(
    env: ChatEnv, server: Any, tmp_path: Any
) -> None:
    from pathlib import Path

    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE-SECRET")
    workspace = Path(server.config.data_dir) / "agents" / env.agent_id / "workspace"
    (workspace / "memory" / "users" / "u1").mkdir(parents=True)
    (workspace / "MEMORY.md").symlink_to(outside)
    (workspace / "memory" / "users" / "u1" / "MEMORY.md").symlink_to(outside)
    (workspace / "memory" / "users" / "u2").symlink_to(tmp_path)  # a linked folder is refused too
    await env.stream("hello", conversation_id="m0")
    await env.stream("hello", conversation_id="m1", endUserId="u1")
    await env.stream("hello", conversation_id="m2", endUserId="u2")
    (outside.parent / "MEMORY.md").write_text("OUTSIDE-SECRET")
    await env.stream("hello", conversation_id="m3", endUserId="u2")
    assert len(env.llm.requests) == 4
    assert not any("OUTSIDE-SECRET" in json.dumps(r["messages"]) for r in env.llm.requests)


async def test_a_call_to_a_tool_the_agent_was_not_given_is_refused(env: ChatEnv) -> None:
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("shell_exec", {"command": "id"})]), Script(text="ok"))
    events = await env.stream("run id")
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is False and "not available" in completed["result"]


async def test_bound_skills_reach_the_system_prompt_unless_skills_are_disabled(env: ChatEnv) -> None:
    skill = await env.api.post("/api/v1/skills", {"content": "---\nname: haiku\ndescription: Answer in haiku.\n---\n"
                                                             "Always answer in three lines of 5, 7 and 5 syllables.\n"},
                               token="alice")
    assert skill.status == 200, skill.body
    await env.api.post(f"/api/v1/agents/{env.agent_id}/skills/{skill.data['id']}", token="alice")
    await env.stream("hello")
    system = env.llm.requests[-1]["messages"][0]["content"]
    assert "### haiku" in system and "5, 7 and 5 syllables" in system
    used = await env.api.get(f"/api/v1/skills/{skill.data['id']}", token="alice")
    assert used.data["useCount"] == 0  # offered, not used: no tool call of the turn named it
    await env.api.put(f"/api/v1/agents/{env.agent_id}", {"skillsDisabled": True}, token="alice")
    await env.stream("hello again")
    assert "haiku" not in env.llm.requests[-1]["messages"][0]["content"]


async def test_an_answer_is_rated_up_or_down_by_its_owner_and_the_rating_is_stored_with_it(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="An answer."))
    done = (await env.stream("hi"))[-1].data
    answer, base = done["assistantMessageId"], "/api/v1/conversations/c1/messages"
    r = await env.api.put(f"{base}/{answer}/rating", {"rating": "up"}, token="alice")
    assert r.status == 200 and r.data["metadata"]["rating"] == "up" and r.data["id"] == answer
    assert (await env.messages())[1]["metadata"]["rating"] == "up"
    r = await env.api.put(f"{base}/{answer}/rating", {"rating": "down"}, token="alice")
    assert (await env.messages())[1]["metadata"]["rating"] == "down"
    r = await env.api.put(f"{base}/{answer}/rating", {"rating": None}, token="alice")
    assert r.status == 200 and "rating" not in (await env.messages())[1]["metadata"]
    bad = await env.api.put(f"{base}/{answer}/rating", {"rating": "meh"}, token="alice")
    assert bad.status == 400 and set(bad.body) == {"code", "msg", "data"}
    user_msg = (await env.messages())[0]["id"]
    r = await env.api.put(f"{base}/{user_msg}/rating", {"rating": "up"}, token="alice")
    assert r.status == 409 and "assistant" in r.body["msg"]  # the stored message's role refuses it
    assert (await env.api.put(f"{base}/999999/rating", {"rating": "up"}, token="alice")).status == 404
    other = await env.api.put(f"{base}/{answer}/rating", {"rating": "down"}, token="bob")  # not bob's conversation
    assert other.status in (403, 404)
    assert "rating" not in (await env.messages())[1]["metadata"]


async def test_regenerate_keeps_the_last_answer_as_an_earlier_version_the_model_no_longer_sees(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="First answer."), Script(text="Second answer."), Script(text="Edited answer."))
    await env.stream("the question")
    await env.stream("the question", regenerate=True)
    assert [m["content"] for m in env.llm.requests[-1]["messages"] if m["role"] != "system"] == ["the question"]
    msgs = await env.messages()
    assert [(m["role"], m["content"], bool(m["metadata"].get("retired"))) for m in msgs] == [
        ("user", "the question", True), ("assistant", "First answer.", True),
        ("user", "the question", False), ("assistant", "Second answer.", False),
    ]
    group = msgs[0]["id"]
    assert {str(m["metadata"]["versionOf"]) for m in msgs[:3]} == {group}  # one exchange, two versions
    await env.stream("the question, edited", regenerate=True)  # edit-and-resend: a third version of the exchange
    sent = [m["content"] for m in env.llm.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == ["the question, edited"]
    msgs = await env.messages()
    live = [m["content"] for m in msgs if not m["metadata"].get("retired")]
    assert live == ["the question, edited", "Edited answer."]
    assert [str(m["metadata"]["versionOf"]) for m in msgs if m["role"] == "user"] == [group, group, group]


async def test_an_earlier_question_is_asked_anew_and_the_messages_after_it_become_its_old_version(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="A1"), Script(text="A2"), Script(text="A3"), Script(text="A2 again"))
    await env.stream("Q1")
    await env.stream("Q2")
    await env.stream("Q3")
    q2 = (await env.messages())[2]
    assert q2["content"] == "Q2"
    await env.stream("Q2, edited", regenerate=True, regenerateFrom=q2["id"])
    sent = [m["content"] for m in env.llm.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == ["Q1", "A1", "Q2, edited"]  # the model sees what came before the edited question, nothing after
    msgs = await env.messages()
    assert [m["content"] for m in msgs if not m["metadata"].get("retired")] == ["Q1", "A1", "Q2, edited", "A2 again"]
    old = [m for m in msgs if m["metadata"].get("retired")]
    assert [m["content"] for m in old] == ["Q2", "A2", "Q3", "A3"]  # the later exchange belongs to the old version
    assert {str(m["metadata"]["branch"]) for m in old} == {q2["id"]}
    assert str(msgs[-2]["metadata"]["versionOf"]) == q2["id"]
    refused = await env.stream("again", regenerate=True, regenerateFrom=q2["id"])  # retired: not in the current version
    assert refused[0].event == "error" and refused[0].data["code"] == 400 and "regenerateFrom" in refused[0].data["message"]
    answer = msgs[1]["id"]
    assert (await env.stream("x", regenerate=True, regenerateFrom=answer))[0].data["code"] == 400  # an answer, not a question
    alone = await env.stream("x", regenerateFrom=msgs[0]["id"])
    assert alone[0].event == "error" and "regenerateFrom goes with regenerate" in alone[0].data["message"]
    assert len(await env.messages()) == len(msgs)  # nothing half-written


async def test_an_answer_cut_by_the_length_limit_is_marked_and_can_be_continued(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="The first half", finish_reason="length"), Script(text=" and the rest."))
    done = (await env.stream("tell me"))[-1]
    assert done.event == "done" and done.data["finishReason"] == "length"
    assert (await env.messages())[1]["metadata"]["finishReason"] == "length"
    done = (await env.stream(conversation_id="c1", continueAnswer=True))[-1]
    assert done.data["status"] == "completed" and done.data["finishReason"] is None
    assert "finishReason" not in ((await env.messages())[3]["metadata"] or {})


async def test_regenerate_without_a_question_is_refused_and_stores_nothing(env: ChatEnv) -> None:
    events = await env.stream("x", conversation_id="c-empty", regenerate=True)
    assert [e.event for e in events] == ["error"] and events[0].data["code"] == 400  # the stream's error frame
    assert "regenerate" in events[0].data["message"]
    assert (await env.api.get("/api/v1/conversations/c-empty/messages", token="alice")).status == 404


async def test_continue_goes_on_with_the_last_answer_from_a_marked_prompt(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="The first half"), Script(text=" and the second half."))
    await env.stream("tell me")
    events = await env.stream(conversation_id="c1", continueAnswer=True)
    assert events[-1].data["status"] == "completed"
    sent = [(m["role"], m["content"]) for m in env.llm.requests[-1]["messages"] if m["role"] != "system"]
    assert sent[:2] == [("user", "tell me"), ("assistant", "The first half")]
    assert sent[2][0] == "user" and "Continue your last answer" in sent[2][1]  # the model sees what it wrote and goes on
    msgs = await env.messages()
    assert msgs[2]["metadata"] == {"continuation": True} and msgs[3]["content"] == " and the second half."
    refused = await env.stream(conversation_id="c-none", continueAnswer=True)
    assert refused[0].event == "error" and refused[0].data["code"] == 400
    bad = await env.stream(conversation_id="c1", continueAnswer=True, regenerate=True)
    assert bad[0].event == "error" and bad[0].data["code"] == 400 and "continueAnswer" in bad[0].data["message"]


async def test_a_conversation_id_follows_one_documented_pattern_on_every_route_that_takes_one(env: ChatEnv) -> None:
    """1-128 characters, no '@', no control character, no space at either end: stated on every conversationId path
    parameter and body field, and refused with the same 400 wherever it comes (it was stripped here, ignored there)."""
    import re

    document = (await env.api.get("/v3/api-docs")).body
    patterns = {p["schema"].get("pattern") for ops in document["paths"].values() for op in ops.values()
                for p in op.get("parameters", []) if p["in"] == "path" and p["name"] == "conversationId"}
    assert len(patterns) == 1 and None not in patterns
    pattern = re.compile(patterns.pop())
    assert document["components"]["schemas"]["ChatRequest"]["properties"]["conversationId"]["pattern"] == pattern.pattern
    for cid in ("c1", "a b", "x" * 128):
        assert pattern.search(cid), cid
    for cid in ("c1%20", "%20c1", "a@b", "c%091", "x" * 129):
        assert not pattern.search(cid.replace("%20", " ").replace("%09", "\t")), cid
        for method, path, body in (("POST", f"/api/v1/chat/{cid}/interrupt", {"message": "x"}), ("POST", f"/api/v1/chat/{cid}/stop", None),
                                   ("GET", f"/api/v1/conversations/{cid}/team-runs", None), ("GET", f"/api/v1/goals/by-conversation/{cid}", None)):
            r = await env.api.request(method, path, body, token="alice")
            assert r.status == 400 and r.msg.startswith("conversationId: "), (method, path, r.body)


async def test_an_interrupt_needs_a_message_or_parts_and_the_synchronous_chat_an_agent(env: ChatEnv) -> None:
    """Stated as the document can: an interrupt's body is required, with anyOf [message with text, one part or more];
    POST /chat requires agentId (POST /agents/{id}/chat takes the agent from the path)."""
    schemas = (await env.api.get("/v3/api-docs")).body
    body = schemas["paths"]["/api/v1/chat/{conversationId}/interrupt"]["post"]["requestBody"]
    assert body["required"] is True
    interrupt = schemas["components"]["schemas"]["InterruptRequest"]
    assert [b["required"] for b in interrupt["anyOf"]] == [["message"], ["contentParts"]]
    assert "agentId" in schemas["components"]["schemas"]["ChatRequest"]["required"]
    for sent in (None, {}, {"message": "  "}, {"contentParts": []}, {"message": "", "contentParts": None}):
        r = await env.api.post("/api/v1/chat/c1/interrupt", sent, token="alice")
        assert r.status == 400, (sent, r.body)
    r = await env.api.post("/api/v1/chat", {"message": "hi"}, token="alice")
    assert r.status == 400 and r.msg.startswith("agentId: "), r.body
