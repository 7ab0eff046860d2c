"""Which requests a tbprof server answers at all: the ``Host`` and ``Origin`` checks.

DNS rebinding: a web page at ``evil.example`` can make its own name resolve to 127.0.0.1, and
the browser then sends that page's requests to a server on the user's loopback with
``Host: evil.example:6007`` and lets the page read the answers (same origin, as far as the
browser knows). A loopback server therefore answers only ``Host`` names that cannot be rebound
(``localhost``, ``*.localhost``, loopback IP literals) plus the names the user allows
(``tbprof serve --allowed-host``, TensorBoard ``--tbprof_allowed_host``); others get a 403.
A server bound to another interface is reachable under any name its network gives it, so it
checks ``Host`` only when the user listed names.

State-changing requests (anything but GET/HEAD/OPTIONS: ``POST capture``) also need an
``Origin`` that is this server itself (or no ``Origin``: a script, not a browser), so a page
on another origin cannot start a capture even where its request is delivered.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))
_LOOPBACK_NAMES = frozenset(("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"))


def _normal(name: str) -> str:
    return name.strip().lower().rstrip(".")


def _is_loopback_ip(text: str) -> bool:
    try:
        return ipaddress.ip_address(text.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback_name(name: str) -> bool:
    """A name every browser resolves to this machine without asking DNS (RFC 6761 for .localhost)."""
    name = _normal(name)
    return name in _LOOPBACK_NAMES or name.endswith(".localhost") or _is_loopback_ip(name)


def is_loopback_bind(bind_host: str) -> bool:
    """Does a server listening on ``bind_host`` only accept connections from this machine?

    ``""``, ``0.0.0.0`` and ``::`` (every interface) are not; a name counts as loopback only
    when every address it resolves to is one.
    """
    host = _normal(bind_host)
    if host in ("", "0.0.0.0", "::", "[::]"):
        return False
    if is_loopback_name(host):
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
        return False  # an IP literal that is not loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(_is_loopback_ip(str(info[4][0])) for info in infos)


def split_host(host_header: str) -> str:
    """The name of a ``Host`` header value without its port (``[::1]:6007`` -> ``::1``)."""
    value = host_header.strip()
    if value.startswith("["):
        end = value.find("]")
        return _normal(value[1:end]) if end > 0 else _normal(value)
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return _normal(value)


@dataclass(frozen=True)
class Refusal:
    """Why a request is not answered, by its kind (http/errors.py gives its status: 403)."""

    kind: str
    message: str


@dataclass(frozen=True)
class Guard:
    """The checks of one server. ``loopback``: is it bound to loopback only."""

    loopback: bool = True
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def for_bind(cls, bind_host: str, allowed_hosts: Iterable[str] = ()) -> Guard:
        return cls(loopback=is_loopback_bind(bind_host),
                   allowed_hosts=frozenset(_normal(h) for h in allowed_hosts if h.strip()))

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return True  # no browser sends a request without Host (HTTP/1.1 requires it): nothing to rebind
        name = split_host(host_header)
        if name in self.allowed_hosts or is_loopback_name(name):
            return True
        # A non-loopback bind answers any name unless the user listed the names it goes by.
        return not self.loopback and not self.allowed_hosts

    def check(self, method: str, host_header: str | None, origin: str | None, scheme: str) -> Refusal | None:
        """None when the request may be answered, else why not."""
        if not self.host_allowed(host_header):
            return Refusal("forbidden_host", (
                f"this tbprof server does not answer requests for host {split_host(host_header or '')!r}: a "
                "server on loopback answers only localhost names (protection against DNS rebinding). If "
                "you reach it under another name, start it with --allowed-host NAME (TensorBoard: "
                "--tbprof_allowed_host NAME)"))
        if method.upper() in SAFE_METHODS or origin is None:
            return None
        if not self._same_origin(origin, host_header, scheme):
            return Refusal("forbidden_origin", (
                f"refused a {method.upper()} from origin {origin[:200]!r}: requests that change something "
                "(such as a capture) are answered only for pages served by this server"))
        return None

    def _same_origin(self, origin: str, host_header: str | None, scheme: str) -> bool:
        if origin == "null" or not host_header:
            return False
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        if parts.scheme != scheme or not parts.netloc:
            return False
        # Same origin: the page's host[:port] is the host[:port] this request was sent to.
        return _normal(parts.netloc) == _normal(host_header)
