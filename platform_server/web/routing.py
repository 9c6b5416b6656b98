"""Route templates and their Tornado regexes.

A placeholder is typed in the template: `{id}` and `{...Id}` are Longs (400 `expected Long` when not
numeric); `{conversationId:str}` is a string id; any other name (`{slug}`, `{key}`) is a string;
`{storedName:.+}` is a string matching that pattern; `/**` at the end captures the rest as `{path}`."""

from __future__ import annotations

import re
from dataclasses import dataclass

import tornado.web

_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]+))?\}")


@dataclass(frozen=True)
class Route:
    template: str  # as documented in OpenAPI: /api/v1/agents/{id}
    handler: type[tornado.web.RequestHandler]
    regex: str
    long_params: frozenset[str] = frozenset()  # placeholders parsed as Long before the handler runs

    def target(self) -> tuple[str, type[tornado.web.RequestHandler], dict[str, object]]:
        """The Tornado rule: regex, handler and the handler's `initialize` arguments."""
        return self.regex, self.handler, {"long_params": self.long_params, "template": self.template}

    @property
    def specificity(self) -> tuple[int, ...]:
        """Sort key: literal segments before parameters, parameters before catch-alls."""
        keys = []
        for segment in self.template.strip("/").split("/"):
            keys.append(2 if segment == "{path}" and self.regex.endswith("(?P<path>.*)$") else 1 if "{" in segment else 0)
        return tuple(keys)


def route(template: str, handler: type[tornado.web.RequestHandler]) -> Route:
    """A route from a template; `/**` at the end captures the rest of the path as `path`."""
    documented = template
    pattern = template
    if template.endswith("/**"):
        documented = template[:-3] + "/{path}"
        pattern = template[:-3]
    regex = ""
    pos = 0
    longs: set[str] = set()
    for match in _PARAM.finditer(pattern):
        regex += re.escape(pattern[pos : match.start()])
        name, kind = match.group(1), match.group(2)
        if kind is None and (name == "id" or name.endswith("Id")) or kind == "long":
            longs.add(name)
        custom = None if kind in (None, "str", "long") else kind
        regex += f"(?P<{name}>{custom or '[^/]+'})"
        pos = match.end()
    regex += re.escape(pattern[pos:])
    if template.endswith("/**"):
        regex += "/(?P<path>.*)"
    documented = _PARAM.sub(lambda m: "{" + m.group(1) + "}", documented)
    return Route(documented, handler, regex + "$", frozenset(longs))


def gated(flag: str, routes: list[Route]) -> list[Route]:
    """Routes that answer 403 `Feature <flag> is disabled` while the feature flag is off."""
    for r in routes:
        setattr(r.handler, "feature", flag)
    return routes
