"""Paths without parameters are found by their text, and never ahead of a route listed before them."""
from __future__ import annotations

import tornado.web

from platform_server.app import GuardedApplication


class First(tornado.web.RequestHandler):
    pass


class Second(tornado.web.RequestHandler):
    pass


def test_a_fixed_path_is_looked_up_directly_unless_an_earlier_route_would_match_it() -> None:
    app = GuardedApplication(
        [(r"/items/(?P<name>[^/]+)$", First), (r"/items/new$", Second), (r"/health$", Second), (r"/health$", First)],
        allowed={"*"},
    )
    assert app.fixed_paths["/health"].target is Second  # the first of two equal routes, as Tornado picks
    assert "/items/new" not in app.fixed_paths  # the parameter route before it takes that path, as it did


def test_routes_added_later_come_before_the_fixed_paths_as_tornado_orders_them() -> None:
    app = GuardedApplication([(r"/health$", Second)], allowed={"*"})
    app.add_handlers(r".*$", [(r"/health$", First)])
    assert app.fixed_paths == {}
