"""Row field maps (`platform_server.serialize`) write the JSON the hand-written dicts did."""
from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from platform_server.serialize import GIVEN, Fields, flag, ident, items, obj, when

ROW = SimpleNamespace(id=7, owner_id=None, name="n", enabled=1, tags=None, config=None,
                      create_time=dt.datetime(2026, 1, 2, 3, 4, 5), finish_time=None)
FIELDS = Fields(id=ident("id"), ownerId=ident("owner_id"), name="name", enabled=flag("enabled"), tags=items("tags"),
                config=obj("config"), createTime=when("create_time"), finishTime=when("finish_time"),
                label=lambda r: r.name.upper(), agentName=GIVEN)


def test_a_field_map_answers_every_field_in_the_order_declared_with_the_usual_conversions() -> None:
    assert FIELDS(ROW, agentName="helper") == {
        "id": "7", "ownerId": None, "name": "n", "enabled": True, "tags": [], "config": {},
        "createTime": "2026-01-02T03:04:05.000Z", "finishTime": None, "label": "N", "agentName": "helper",
    }
    assert list(FIELDS(ROW, agentName=None)) == list(FIELDS.fields)


def test_a_given_field_must_be_passed_and_only_keeps_the_named_fields_in_the_order_given() -> None:
    with pytest.raises(KeyError):
        FIELDS(ROW)
    assert FIELDS.only("name", "id")(ROW) == {"name": "n", "id": "7"}
