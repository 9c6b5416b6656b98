"""The console as an installable app (manifest, icons, service worker) and the server's own HTTPS
(`platform-server tls`: a local CA and a certificate for this machine's names; `tls_cert_file`/`tls_key_file`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import stat
import struct
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from platform_server import cli, tls
from platform_server.config import load_config
from platform_server.web.console_files import shell_urls, shell_version
from tests.helpers.server import RunningServer, start_server

STATIC = Path(__file__).resolve().parents[1] / "static"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_manifest_names_the_app_and_its_icons_exist(server: RunningServer) -> None:
    r = await server.client.get("/manifest.webmanifest")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("application/manifest+json")
    manifest = json.loads(r.raw)
    assert manifest["display"] == "standalone" and manifest["start_url"].startswith("/") and manifest["name"]
    sizes = set()
    for icon in manifest["icons"]:
        got = await server.client.get(icon["src"])
        assert got.status == 200, icon
        if icon["type"] == "image/png":
            w, h = _png_size(got.raw)
            assert icon["sizes"] == f"{w}x{h}"
            sizes.add((w, icon.get("purpose", "any")))
    assert {(192, "any"), (512, "any"), (512, "maskable")} <= sizes  # what browsers need to offer "Install"
    index = await server.client.get("/")
    page = index.raw.decode()
    assert '<link rel="manifest" href="/manifest.webmanifest">' in page
    assert 'rel="apple-touch-icon"' in page


async def test_service_worker_keeps_the_shell_and_never_an_api_answer(server: RunningServer) -> None:
    r = await server.client.get("/sw.js")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("text/javascript")
    assert r.headers["Cache-Control"] == "no-cache"  # the browser checks for a new worker on every visit
    text = r.raw.decode()
    urls = json.loads(re.search(r"const SHELL_URLS = (\[.*?\]);", text).group(1))  # type: ignore[union-attr]
    version = re.search(r'const VERSION = "([0-9a-f]{16})";', text)
    assert version is not None
    assert "/" in urls and "/static/app/main.js" in urls and "/static/app/style.css" in urls
    for path in (STATIC / "app").rglob("*"):
        if path.is_file():
            assert "/static/" + path.relative_to(STATIC).as_posix() in urls
    assert not [u for u in urls if u.startswith("/api") or "swagger" in u]
    for url in urls:  # every URL the worker fetches at install exists (one 404 and the install fails)
        assert (await server.client.get(url)).status == 200, url
    assert "/api" not in text.split("function isShell", 1)[1].split("self.addEventListener", 1)[0]


def test_the_shell_version_follows_its_contents(tmp_path: Path) -> None:
    copy = tmp_path / "static"
    shutil.copytree(STATIC, copy, ignore=shutil.ignore_patterns("swagger-ui"))
    urls = shell_urls(str(copy))
    before = shell_version(str(copy), urls)
    assert shell_version(str(copy), urls) == before
    (copy / "app" / "style.css").write_text("body { color: red }\n")
    assert shell_version(str(copy), urls) != before


def _cert(path: str) -> x509.Certificate:
    with open(path, "rb") as f:
        return x509.load_pem_x509_certificate(f.read())


def test_tls_command_makes_a_ca_and_a_certificate_for_the_lan_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    cli.main(["tls", "--data-dir", data, "--names", "box.lan, 10.9.8.7"])
    out = capsys.readouterr().out
    folder = Path(data) / "tls"
    for name in ("ca.key", "server.key"):
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600
    assert f'tls_cert_file = "{folder / "server.crt"}"' in out and "Certificate Trust" in out
    cert, ca = _cert(str(folder / "server.crt")), _cert(str(folder / "ca.crt"))
    assert cert.issuer == ca.subject
    ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes, cert.signature_algorithm_parameters)  # type: ignore[call-arg, arg-type]
    alt = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = alt.get_values_for_type(x509.DNSName)
    ips = [str(ip) for ip in alt.get_values_for_type(x509.IPAddress)]
    assert {"localhost", "box.lan"} <= set(dns) and {"127.0.0.1", "10.9.8.7"} <= set(ips)
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days <= 825  # what Apple devices accept
    ca_bytes = (folder / "ca.crt").read_bytes()
    cli.main(["tls", "--data-dir", data])  # renewing keeps the CA the devices already trust
    assert "kept the local CA" in capsys.readouterr().out
    assert (folder / "ca.crt").read_bytes() == ca_bytes
    assert _cert(str(folder / "server.crt")).serial_number != cert.serial_number


async def test_server_speaks_https_with_the_certificate_and_hands_out_its_ca(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    issued = tls.issue(load_config(None, env={}, overrides={"data_dir": data}), [])
    running = await start_server(data, tls_cert_file=issued.cert, tls_key_file=issued.key)
    port = running.config.port
    trusting = ssl.create_default_context(cafile=issued.ca_cert)
    try:
        async with aiohttp.ClientSession() as session:
            for host in ("127.0.0.1", "localhost"):
                async with session.get(f"https://{host}:{port}/api/v1/setup/status", ssl=trusting) as r:
                    assert r.status == 200 and (await r.json())["code"] == 200
            async with session.get(f"https://127.0.0.1:{port}/ca.crt", ssl=trusting) as r:
                assert r.status == 200 and r.headers["Content-Type"] == "application/x-x509-ca-cert"
                assert await r.read() == Path(issued.ca_cert).read_bytes()
            with pytest.raises(aiohttp.ClientConnectorCertificateError):  # a client that does not trust the CA refuses
                await session.get(f"https://127.0.0.1:{port}/api/v1/setup/status", ssl=ssl.create_default_context())
            with pytest.raises(aiohttp.ClientError):  # plain HTTP gets no answer on the TLS port
                await session.get(f"http://127.0.0.1:{port}/api/v1/setup/status")
    finally:
        await running.stop()


async def test_ca_certificate_is_404_without_one(server: RunningServer) -> None:
    assert (await server.client.get("/ca.crt")).status == 404


def test_half_a_tls_setting_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    with pytest.raises(SystemExit) as exc:
        cli.main(["serve", "--data-dir", data, "--config", _toml(tmp_path, 'tls_cert_file = "/nowhere.crt"')])
    assert "tls_key_file" in str(exc.value)


def _toml(tmp_path: Path, line: str) -> str:
    path = tmp_path / "settings.toml"
    path.write_text(line + "\n")
    return str(path)
