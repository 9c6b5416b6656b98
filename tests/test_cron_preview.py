"""The cron schedule preview: the expression in words and the next run times in the chosen zone."""
from __future__ import annotations

import datetime as dt

from platform_server.features.cron.schedule import preview
from tests.helpers.client import ApiClient

PREVIEW = "/api/v1/cron-jobs/preview"


def test_nine_on_weekdays_in_berlin_gives_five_local_times_with_their_offsets() -> None:
    data = preview("0 9 * * 1-5", "Europe/Berlin", dt.datetime(2026, 3, 27, 12, 0))  # a Friday, before the DST switch
    assert data["description"] == "At 09:00 on Monday through Friday"
    assert data["nextRuns"] == ["2026-03-30T09:00:00+02:00", "2026-03-31T09:00:00+02:00", "2026-04-01T09:00:00+02:00",
                                "2026-04-02T09:00:00+02:00", "2026-04-03T09:00:00+02:00"]


async def test_the_preview_route_answers_words_and_runs_and_refuses_bad_input(api: ApiClient, people: dict) -> None:
    r = await api.get(PREVIEW, token="carol", params={"cronExpression": "*/30  *  * * *", "timezone": "Asia/Tokyo", "count": 3})
    assert r.status == 200, r.body
    assert r.data["cronExpression"] == "*/30 * * * *" and r.data["timezone"] == "Asia/Tokyo"
    assert r.data["description"].startswith("Every 30th minute") and len(r.data["nextRuns"]) == 3
    assert all(t.endswith("+09:00") for t in r.data["nextRuns"])
    first, second = (dt.datetime.fromisoformat(t) for t in r.data["nextRuns"][:2])
    assert second - first == dt.timedelta(minutes=30)
    bad = [({"cronExpression": "* * *"}, "cronExpression: must have 5 fields"),
           ({"cronExpression": "61 * * * *"}, "cronExpression:"),
           ({"cronExpression": "* * * * *", "count": 0}, "count:"),
           ({"cronExpression": "* * * * *", "count": 99}, "count:")]
    for params, msg in bad:
        r = await api.get(PREVIEW, token="carol", params=params)
        assert r.status == 400 and r.msg.startswith(msg), (params, r.body)
    assert (await api.get(PREVIEW, params={"cronExpression": "* * * * *"})).status == 401


async def test_the_preview_takes_every_expression_its_documented_pattern_allows(api: ApiClient, people: dict) -> None:
    """The document states the cron pattern and the zone enum: a range from high to low wraps around (hours 22-2),
    a day no month of it has (31 in February) previews as never, and an empty timezone or count is not absent."""
    import re

    document = (await api.get("/v3/api-docs")).body
    params = {p["name"]: p["schema"] for p in document["paths"][PREVIEW]["get"]["parameters"]}
    for expression in ("0 22-2 * * *", "59-1/2 * * * 6-1", "0 0 31 2 *"):
        assert re.search(params["cronExpression"]["pattern"], expression), expression
    r = await api.get(PREVIEW, token="carol", params={"cronExpression": "0 22-2 * * *", "timezone": "UTC", "count": 6})
    assert r.status == 200 and r.data["cronExpression"] == "0 22,23,0,1,2 * * *", r.body
    assert {int(t[11:13]) for t in r.data["nextRuns"]} == {22, 23, 0, 1, 2}
    r = await api.get(PREVIEW, token="carol", params={"cronExpression": "0 0 * * 6-1", "timezone": "UTC"})
    assert r.status == 200 and r.data["cronExpression"] == "0 0 * * 6,0,1", r.body
    r = await api.get(PREVIEW, token="carol", params={"cronExpression": "0 0 31 2 *", "timezone": "UTC"})
    assert r.status == 200 and r.data["nextRuns"] == [], r.body
    assert re.search(params["timezone"]["pattern"], "Etc/GMT+1") and not re.search(params["timezone"]["pattern"], " UTC")
    r = await api.get(PREVIEW, token="carol", params={"cronExpression": "* * * * *", "timezone": "Mars/Base"})
    assert r.status == 404 and r.msg == "timezone: unknown time zone 'Mars/Base'"  # well formed: the zone database lacks it
    for bad in ({"timezone": ""}, {"timezone": " UTC"}, {"count": ""}):
        r = await api.get(PREVIEW, token="carol", params={"cronExpression": "* * * * *", **bad})
        assert r.status == 400, (bad, r.body)
