"""Long parameters accept ASCII digits only: '²' passes str.isdigit() but int() refuses it, which used to be a 500."""

from __future__ import annotations

import pytest

from tests.helpers.client import ApiClient

UNICODE_DIGITS = ["\u00b2", "\u0663", "1\u00b9", "-\u00b2"]


@pytest.mark.parametrize("digits", UNICODE_DIGITS)
async def test_a_unicode_digit_path_id_answers_400(api: ApiClient, people: dict, digits: str) -> None:
    for path in (f"/api/v1/agents/{digits}", f"/api/v1/workspaces/{digits}", f"/api/v1/teams/{digits}"):
        res = await api.get(path, token="alice")
        assert res.status == 400 and res.body["code"] == 400 and "data" in res.body, (path, res.body)


async def test_the_percent_encoded_superscript_two_answers_400(api: ApiClient, people: dict) -> None:
    res = await api.get("/api/v1/agents/%C2%B2", token="alice")
    assert res.status == 400 and set(res.body) >= {"code", "msg", "data"}


@pytest.mark.parametrize("name", ["page", "size"])
@pytest.mark.parametrize("digits", UNICODE_DIGITS)
async def test_unicode_digit_page_parameters_answer_400(api: ApiClient, people: dict, name: str, digits: str) -> None:
    res = await api.get("/api/v1/audit/events", token="alice", params={name: digits})
    assert res.status == 400 and res.body["code"] == 400 and name in res.msg
