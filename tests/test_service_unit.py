"""The systemd unit in scripts/: data dir, restart policy, graceful stop and hardening; the README installs it."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "scripts" / "platform-server.service"


def settings() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def test_the_unit_keeps_data_in_a_private_state_dir_restarts_and_is_sandboxed() -> None:
    s = settings()
    assert s["StateDirectory"] == ["platform-server"] and s["StateDirectoryMode"] == ["0700"]
    assert "PLATFORM_DATA_DIR=/var/lib/platform-server" in s["Environment"]
    assert s["Restart"] == ["on-failure"] and s["KillSignal"] == ["SIGTERM"]
    assert int(s["TimeoutStopSec"][0]) > 30  # more than the default shutdown_grace_s
    assert s["User"] == ["platform"] and s["UMask"] == ["0077"]
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp", "PrivateDevices"):
        assert s[key] == ["yes"], key
    assert s["ProtectSystem"] == ["strict"] and s["ReadWritePaths"] == ["/var/lib/platform-server"]


def test_systemd_accepts_the_unit(tmp_path: Any) -> None:
    if shutil.which("systemd-analyze") is None:
        return
    copy = tmp_path / "platform-server.service"
    copy.write_text(UNIT.read_text().replace("/opt/platform-server/bin/platform-server serve", "/bin/true"))
    done = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60)
    problems = [line for line in done.stderr.splitlines() if "platform-server.service" in line]
    assert problems == [], problems


def test_the_readme_says_how_to_install_the_unit_expose_the_server_and_back_it_up() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "scripts/platform-server.service /etc/systemd/system/" in readme
    assert "systemctl enable --now platform-server" in readme
    for heading in ("### On the LAN", "### Backup and restore", "### Stopping and running as a service"):
        assert heading in readme
    assert "allowed_hosts" in readme and "reverse_proxy" in readme
