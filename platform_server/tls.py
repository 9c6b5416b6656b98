"""HTTPS of the server itself: a local certificate authority and a certificate for this machine's LAN names.

Browsers install the console as an app and run its service worker only on a secure origin; on a LAN that
means HTTPS with a certificate the phone trusts. `platform-server tls` makes a private CA once (its key stays
in `<data_dir>/tls`, mode 0600) and a server certificate signed by it for the names and addresses clients
type; the user installs the CA's certificate (served at `/ca.crt`) on each device once. `tls_cert_file` and
`tls_key_file` then make `serve` speak HTTPS with Tornado's own TLS (any certificate works there, e.g. one
from a public CA).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from platform_server.config import Config
from platform_server.lazy import lazy_import
from platform_server.web import hosts

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509 import oid as _oid
else:
    x509 = lazy_import("cryptography.x509")  # only the `tls` command builds certificates
    hashes = lazy_import("cryptography.hazmat.primitives.hashes")
    serialization = lazy_import("cryptography.hazmat.primitives.serialization")
    ec = lazy_import("cryptography.hazmat.primitives.asymmetric.ec")
    _oid = lazy_import("cryptography.x509.oid")

CA_DAYS = 3650
# Apple devices refuse server certificates valid longer than 825 days even from a CA the user installed;
# 397 days also meets what browsers require of public CAs. Run `platform-server tls` again to renew.
SERVER_DAYS = 397


def tls_dir(config: Config) -> str:
    return os.path.join(config.data_dir, "tls")


def ca_cert_path(config: Config) -> str:
    return os.path.join(tls_dir(config), "ca.crt")


@dataclass(frozen=True)
class Issued:
    ca_cert: str
    cert: str
    key: str
    names: list[str]
    ca_created: bool
    not_after: datetime.datetime


def server_names(extra: list[str]) -> list[str]:
    """What LAN clients type to reach this machine: localhost, its host names and addresses, and `extra`."""
    names = {"localhost", "127.0.0.1", "::1", *hosts.machine_names(), *(n.strip().lower() for n in extra if n.strip())}
    return sorted(names)


def issue(config: Config, extra_names: list[str], now: datetime.datetime | None = None) -> Issued:
    """Make the CA when there is none (kept, so devices that trust it keep trusting), then a new certificate
    and key for this machine's names; returns the paths."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    folder = tls_dir(config)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    ca_key_path = os.path.join(folder, "ca.key")
    ca_created = not (os.path.exists(ca_key_path) and os.path.exists(ca_cert_path(config)))
    if ca_created:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _ca_certificate(ca_key, now)
        _write(ca_key_path, _private_pem(ca_key), private=True)
        _write(ca_cert_path(config), ca_cert.public_bytes(serialization.Encoding.PEM), private=False)
    else:
        with open(ca_key_path, "rb") as f:
            loaded = serialization.load_pem_private_key(f.read(), password=None)
        with open(ca_cert_path(config), "rb") as f:
            ca_cert = x509.load_pem_x509_certificate(f.read())
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key_path} is not the EC key this command makes")
        ca_key = loaded
    names = server_names(extra_names)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _server_certificate(key, ca_key, ca_cert, names, now)
    cert_path, key_path = os.path.join(folder, "server.crt"), os.path.join(folder, "server.key")
    _write(key_path, _private_pem(key), private=True)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
    return Issued(ca_cert_path(config), cert_path, key_path, names, ca_created, cert.not_valid_after_utc)


def server_context(config: Config) -> ssl.SSLContext | None:
    """The TLS context `serve` listens with, or None for plain HTTP (no certificate configured)."""
    if not config.tls_cert_file and not config.tls_key_file:
        return None
    if not (config.tls_cert_file and config.tls_key_file):
        raise ValueError("tls_cert_file and tls_key_file go together: set both, or neither for plain HTTP")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    return context


def _ca_certificate(key: ec.EllipticCurvePrivateKey, now: datetime.datetime) -> x509.Certificate:
    oid = _oid.NameOID
    name = x509.Name([x509.NameAttribute(oid.COMMON_NAME, "Agent Platform local CA"), x509.NameAttribute(oid.ORGANIZATION_NAME, "Agent Platform")])
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def _server_certificate(
    key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, names: list[str], now: datetime.datetime
) -> x509.Certificate:
    alt: list[x509.GeneralName] = []
    for n in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            alt.append(x509.DNSName(n))
    subject = x509.Name([x509.NameAttribute(_oid.NameOID.COMMON_NAME, next((n for n in names if n != "localhost" and not _is_ip(n)), "localhost"))])
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([_oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _write(path: str, data: bytes, private: bool) -> None:
    """Written whole or not at all (a temporary file renamed); keys readable by this user only."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


TRUST_STEPS = """\
Trust the CA once on each device (its certificate is also served at https://<this box>:{port}/ca.crt):
  iPhone/iPad: open the ca.crt file (AirDrop, mail, or the /ca.crt link in Safari) -> Settings -> General ->
    VPN & Device Management -> install the profile; then Settings -> General -> About -> Certificate Trust
    Settings -> turn on full trust for "Agent Platform local CA".
  Android: Settings -> Security -> Encryption & credentials -> Install a certificate -> CA certificate ->
    choose ca.crt.
  Desktop Chrome/Edge: Settings -> Privacy and security -> Security -> Manage certificates -> Authorities ->
    Import ca.crt (trust for websites). Firefox: Settings -> Certificates -> View Certificates -> Authorities.
  Debian/Ubuntu: cp ca.crt /usr/local/share/ca-certificates/agent-platform.crt && update-ca-certificates
"""
