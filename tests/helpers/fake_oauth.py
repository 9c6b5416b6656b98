"""A small real OAuth 2.0 server: authorization code + PKCE (auto-approving), device flow (RFC 8628), refresh, revoke."""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web


@dataclass
class Device:
    device_code: str
    user_code: str
    client_id: str
    expires_at: float
    state: str = "pending"  # pending | approved | denied
    last_poll: float = 0.0


@dataclass
class FakeOAuthServer:
    client_id: str = "platform-client"
    expires_in: int = 3600
    device_interval: int = 0
    enforce_interval: bool = False
    host: str = "127.0.0.1"
    port: int = 0
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    devices: dict[str, Device] = field(default_factory=dict)
    access_tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    revoked: list[str] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)  # grant_type of every token request
    _server: tornado.httpserver.HTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> "FakeOAuthServer":
        sockets = tornado.netutil.bind_sockets(self.port, self.host, family=socket.AF_INET)
        self.port = sockets[0].getsockname()[1]
        args = {"srv": self}
        app = tornado.web.Application([
            (r"/authorize", AuthorizeHandler, args),
            (r"/token", TokenHandler, args),
            (r"/device/code", DeviceCodeHandler, args),
            (r"/revoke", RevokeHandler, args),
        ])
        self._server = tornado.httpserver.HTTPServer(app)
        self._server.add_sockets(sockets)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            await self._server.close_all_connections()
            self._server = None

    def approve(self, user_code: str, ok: bool = True) -> None:
        """The user entering the code in a browser and approving (or denying)."""
        for d in self.devices.values():
            if d.user_code == user_code:
                d.state = "approved" if ok else "denied"
                return
        raise KeyError(user_code)

    def issue(self) -> dict[str, Any]:
        access, refresh = "at-" + secrets.token_hex(8), "rt-" + secrets.token_hex(8)
        self.access_tokens.add(access)
        self.refresh_tokens.add(refresh)
        return {"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
                "expires_in": self.expires_in, "scope": "openid offline_access"}


class _Handler(tornado.web.RequestHandler):
    def initialize(self, srv: FakeOAuthServer) -> None:
        self.srv = srv

    def check_xsrf_cookie(self) -> None:
        pass

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in urllib.parse.parse_qs(self.request.body.decode(), keep_blank_values=True).items()}

    def answer(self, status: int, payload: dict[str, Any]) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(payload))

    def error(self, error: str, description: str = "", status: int = 400) -> None:
        self.answer(status, {"error": error, "error_description": description})


class AuthorizeHandler(_Handler):
    def get(self) -> None:
        q = {k: self.get_query_argument(k, "") for k in ("response_type", "client_id", "redirect_uri", "state",
                                                         "code_challenge", "code_challenge_method")}
        if q["client_id"] != self.srv.client_id or q["response_type"] != "code" or q["code_challenge_method"] != "S256":
            self.error("invalid_request", "bad authorization request")
            return
        code = "code-" + secrets.token_hex(8)
        self.srv.codes[code] = q
        sep = "&" if "?" in q["redirect_uri"] else "?"
        self.redirect(q["redirect_uri"] + sep + urllib.parse.urlencode({"code": code, "state": q["state"]}))


class TokenHandler(_Handler):
    def post(self) -> None:
        f = self.form()
        grant = f.get("grant_type", "")
        self.srv.grants.append(grant)
        if f.get("client_id") != self.srv.client_id:
            self.error("invalid_client", status=401)
        elif grant == "authorization_code":
            self.code(f)
        elif grant == "refresh_token":
            if f.get("refresh_token") not in self.srv.refresh_tokens:
                self.error("invalid_grant", "unknown refresh token")
                return
            self.srv.refresh_tokens.discard(f["refresh_token"])  # rotation
            self.answer(200, self.srv.issue())
        elif grant == "urn:ietf:params:oauth:grant-type:device_code":
            self.device(f)
        else:
            self.error("unsupported_grant_type")

    def code(self, f: dict[str, str]) -> None:
        req = self.srv.codes.pop(f.get("code", ""), None)
        if req is None:
            self.error("invalid_grant", "unknown or used code")
            return
        digest = hashlib.sha256(f.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != req["code_challenge"]:
            self.error("invalid_grant", "PKCE verification failed")
            return
        if f.get("redirect_uri") != req["redirect_uri"]:
            self.error("invalid_grant", "redirect_uri mismatch")
            return
        self.answer(200, self.srv.issue())

    def device(self, f: dict[str, str]) -> None:
        d = self.srv.devices.get(f.get("device_code", ""))
        if d is None:
            self.error("invalid_grant", "unknown device code")
            return
        now = time.time()
        if now > d.expires_at:
            self.error("expired_token")
            return
        if self.srv.enforce_interval and now - d.last_poll < self.srv.device_interval:
            d.last_poll = now
            self.error("slow_down")
            return
        d.last_poll = now
        if d.state == "pending":
            self.error("authorization_pending")
        elif d.state == "denied":
            self.error("access_denied")
        else:
            del self.srv.devices[d.device_code]
            self.answer(200, self.srv.issue())


class DeviceCodeHandler(_Handler):
    def post(self) -> None:
        f = self.form()
        if f.get("client_id") != self.srv.client_id:
            self.error("invalid_client", status=401)
            return
        d = Device("dc-" + secrets.token_hex(8), secrets.token_hex(2).upper() + "-" + secrets.token_hex(2).upper(),
                   f["client_id"], time.time() + 600, last_poll=time.time())
        self.srv.devices[d.device_code] = d
        self.answer(200, {"device_code": d.device_code, "user_code": d.user_code,
                          "verification_uri": self.srv.url + "/device",
                          "verification_uri_complete": self.srv.url + "/device?user_code=" + d.user_code,
                          "expires_in": 600, "interval": self.srv.device_interval})


class RevokeHandler(_Handler):
    def post(self) -> None:
        f = self.form()
        token = f.get("token", "")
        self.srv.revoked.append(token)
        self.srv.access_tokens.discard(token)
        self.srv.refresh_tokens.discard(token)
        self.set_status(200)
        self.finish()
