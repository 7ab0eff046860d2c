"""Strict parsing of profiler server addresses: ``host:port`` or ``grpc://host:port``.

Capture makes this machine open connections to whatever a request names, so anything
that is not plainly a host and a port (user info, paths, queries, other schemes, zone
ids, stray spaces inside) is refused rather than passed to gRPC's own, looser parser.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

MAX_ADDRESSES = 32
SCHEME = "grpc://"

# RFC 1123 labels; a trailing dot (fully-qualified) is allowed.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?:{_LABEL}\.)*{_LABEL}\.?")
_PORT = re.compile(r"[0-9]{1,5}")


class AddressError(ValueError):
    """An address that is not ``host:port`` / ``grpc://host:port``."""


@dataclass(frozen=True)
class Address:
    text: str  # as the user wrote it (trimmed)
    host: str  # hostname (lower case), IPv4 or IPv6 literal without brackets
    port: int
    kind: str  # "dns", "ipv4" or "ipv6"

    @property
    def key(self) -> str:
        """One spelling per server, used to refuse two captures of the same server at once."""
        return f"[{self.host}]:{self.port}" if self.kind == "ipv6" else f"{self.host}:{self.port}"

    @property
    def grpc_target(self) -> str:
        """An explicit gRPC target, so gRPC never guesses a resolver from the text."""
        if self.kind == "ipv4":
            return f"ipv4:{self.host}:{self.port}"
        if self.kind == "ipv6":
            return f"ipv6:[{self.host}]:{self.port}"
        return f"dns:///{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """This machine by its literal name (``localhost``, 127.0.0.0/8, ``::1``); a DNS name is
        not resolved to decide (its answer is not ours to trust)."""
        if self.kind == "dns":
            return self.host == "localhost"
        return ipaddress.ip_address(self.host).is_loopback

    @property
    def host_name(self) -> str:
        """The file stem the server is asked to use: ``localhost_6009`` for localhost:6009."""
        return re.sub(r"[^A-Za-z0-9.-]", "_", f"{self.host}_{self.port}").strip(".") or f"host_{self.port}"


def parse_address(text: str) -> Address:
    raw = text.strip()
    if not raw:
        raise AddressError("empty address")
    rest = raw[len(SCHEME):] if raw.startswith(SCHEME) else raw
    if "://" in rest:
        raise AddressError(f"{raw!r}: only host:port or grpc://host:port are accepted")
    if any(c in rest for c in "/@?#%\\ \t\r\n\x00"):
        raise AddressError(f"{raw!r}: expected host:port (no path, user, query or spaces)")
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0 or rest[close + 1:close + 2] != ":":
            raise AddressError(f"{raw!r}: an IPv6 address is written [addr]:port")
        host_text, port_text = rest[1:close], rest[close + 2:]
        try:
            host = ipaddress.IPv6Address(host_text).compressed
        except ValueError:
            raise AddressError(f"{raw!r}: {host_text!r} is not an IPv6 address") from None
        kind = "ipv6"
    else:
        if rest.count(":") != 1:
            raise AddressError(f"{raw!r}: expected host:port (IPv6 addresses go in brackets: [::1]:6009)")
        host_text, port_text = rest.split(":")
        if not host_text:
            raise AddressError(f"{raw!r}: the host is missing")
        if re.fullmatch(r"[0-9.]+", host_text):
            try:
                host = str(ipaddress.IPv4Address(host_text))
            except ValueError:
                raise AddressError(f"{raw!r}: {host_text!r} is not an IPv4 address") from None
            kind = "ipv4"
        elif len(host_text) <= 253 and _HOSTNAME.fullmatch(host_text):
            host, kind = host_text.lower().rstrip("."), "dns"
        else:
            raise AddressError(f"{raw!r}: {host_text!r} is not a valid host name")
    if not _PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise AddressError(f"{raw!r}: the port must be a number from 1 to 65535")
    return Address(text=raw, host=host, port=int(port_text), kind=kind)


def parse_addresses(value: str | list[str]) -> list[Address]:
    """Comma-separated text (or a list of such texts) -> distinct addresses, in order."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in items):
        raise AddressError("addresses must be text: host:port, comma-separated")
    parts = [p for item in items for p in item.split(",")]
    if not any(p.strip() for p in parts):
        raise AddressError("no address given: expected host:port (e.g. localhost:6009)")
    out: list[Address] = []
    seen: set[str] = set()
    for part in parts:
        if not part.strip():
            raise AddressError(f"empty entry in the address list {','.join(parts)!r}")
        addr = parse_address(part)
        if addr.key in seen:
            raise AddressError(f"{addr.text!r} is listed twice")
        seen.add(addr.key)
        out.append(addr)
    if len(out) > MAX_ADDRESSES:
        raise AddressError(f"{len(out)} addresses: at most {MAX_ADDRESSES} per capture")
    return out


def host_names(addresses: list[Address]) -> list[str]:
    """A distinct file stem per address (two addresses could sanitise to the same stem)."""
    names: list[str] = []
    for addr in addresses:
        name, n = addr.host_name, 2
        while name in names:
            name, n = f"{addr.host_name}-{n}", n + 1
        names.append(name)
    return names
