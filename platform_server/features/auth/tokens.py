"""JWT issue/verify (HS256) and the JWT secret kept in the data dir."""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

import jwt

from platform_server import sealed


def load_secret(configured: str, data_dir: str) -> bytes:
    """The configured secret, or one generated on first start and kept (mode 0600)."""
    if configured:
        secret = configured.encode()
    else:
        path = os.path.join(data_dir, "jwt_secret")
        if os.path.exists(path):
            with open(path, "rb") as fh:
                secret = fh.read().strip()
        else:  # several processes may start at once on one data dir: the first one's secret is everyone's
            secret = sealed.create_once(path, secrets.token_urlsafe(32).encode()).strip()
    if len(secret) < 32:
        raise SystemExit("jwt_secret must be at least 32 bytes")
    return secret


class JwtIssuer:
    """Signs and verifies the platform's JWTs."""

    def __init__(self, secret: bytes, ttl_ms: int) -> None:
        self._secret = secret
        self.ttl_ms = ttl_ms

    def issue(self, user_id: int, username: str, role: str) -> str:
        """A signed token; `iat` keeps sub-second precision so a password change revokes even a token of the same second."""
        now = time.time()
        claims = {
            "sub": username,
            "userId": str(user_id),
            "role": role,
            "iat": now,
            "exp": int(now + self.ttl_ms / 1000),
        }
        return jwt.encode(claims, self._secret, algorithm="HS256")

    def verify(self, token: str) -> dict[str, Any] | None:
        """The claims of a valid, unexpired HS256 token; None otherwise."""
        try:
            claims = jwt.decode(token, self._secret, algorithms=["HS256"], options={"require": ["exp", "iat", "sub", "userId"]})
        except jwt.PyJWTError:
            return None
        if not str(claims.get("userId", "")).isdigit():
            return None
        return claims
