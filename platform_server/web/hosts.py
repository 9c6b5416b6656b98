"""The Host check: a browser tricked by DNS rebinding sends a foreign Host header, which is refused."""

from __future__ import annotations

import ipaddress
import socket

from platform_server.config import Config

WILDCARD = "*"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
ALL_INTERFACES = ("0.0.0.0", "::", "")


def machine_names() -> set[str]:
    """This machine's host name, FQDN, `<name>.local` and its addresses (what LAN clients type)."""
    names: set[str] = set()
    try:
        host = socket.gethostname()
        names |= {host, f"{host}.local", socket.getfqdn()}
        for info in socket.getaddrinfo(host, None):
            names.add(str(info[4][0]))
    except OSError:
        pass
    try:  # the address of the default route's interface, without sending anything
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            names.add(probe.getsockname()[0])
    except OSError:
        pass
    return {n.lower() for n in names if n}


def allowed_hosts(config: Config) -> set[str]:
    """The host names (lower case, no port) requests may name; {"*"} when the check is off."""
    if config.allowed_hosts:
        return {h.strip().lower().strip("[]") for h in config.allowed_hosts if h.strip()}
    names = {*LOOPBACK_NAMES, config.host.lower().strip("[]")}
    if config.host in ALL_INTERFACES:
        names |= machine_names()
    return names


def host_name(header: str) -> str:
    """The name of a Host header without its port (`[::1]:8080` -> `::1`)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def is_allowed(header: str | None, allowed: set[str]) -> bool:
    if WILDCARD in allowed:
        return True
    name = host_name(header or "")
    if name in allowed:
        return True
    try:  # any loopback address is this machine
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
