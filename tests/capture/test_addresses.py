"""Address parsing is strict: only host:port and grpc://host:port reach gRPC."""

from __future__ import annotations

import re

import pytest

from tbprof.capture.addresses import MAX_ADDRESSES, AddressError, parse_address, parse_addresses


@pytest.mark.parametrize(("text", "key", "target", "host_name"), [
    ("localhost:6009", "localhost:6009", "dns:///localhost:6009", "localhost_6009"),
    ("grpc://localhost:6009", "localhost:6009", "dns:///localhost:6009", "localhost_6009"),
    ("  Worker-0.Cluster.local:1 ", "worker-0.cluster.local:1", "dns:///worker-0.cluster.local:1",
     "worker-0.cluster.local_1"),
    ("10.0.0.7:65535", "10.0.0.7:65535", "ipv4:10.0.0.7:65535", "10.0.0.7_65535"),
    ("[::1]:6009", "[::1]:6009", "ipv6:[::1]:6009", "__1_6009"),
    ("grpc://[2001:db8:0:0::1]:80", "[2001:db8::1]:80", "ipv6:[2001:db8::1]:80", "2001_db8__1_80"),
])
def test_valid_addresses(text: str, key: str, target: str, host_name: str) -> None:
    a = parse_address(text)
    assert (a.key, a.grpc_target, a.host_name) == (key, target, host_name)


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty"),
    ("localhost", "expected host:port"),
    ("localhost:", "port"),
    (":6009", "host is missing"),
    ("localhost:0", "port"),
    ("localhost:65536", "port"),
    ("localhost:+80", "port"),
    ("localhost:6009/path", "no path"),
    ("user@localhost:6009", "no path, user"),
    ("http://localhost:6009", "only host:port or grpc://"),
    ("dns:///localhost:6009", "only host:port or grpc://"),
    ("unix:/tmp/sock", "no path"),
    ("grpc://localhost:6009?x=1", "no path, user, query"),
    ("local host:6009", "spaces"),
    ("-bad-.example:6009", "not a valid host name"),
    ("a_b:6009", "not a valid host name"),
    ("300.1.1.1:6009", "not an IPv4 address"),
    ("::1:6009", "IPv6 addresses go in brackets"),
    ("[::1]6009", "[addr]:port"),
    ("[fe80::1%eth0]:6009", "no path, user, query or spaces"),
    ("[not-ip]:6009", "not an IPv6 address"),
])
def test_malformed_addresses(text: str, why: str) -> None:
    with pytest.raises(AddressError, match=re.escape(why)):
        parse_address(text)


def test_address_lists() -> None:
    addrs = parse_addresses("localhost:1, grpc://127.0.0.1:2")
    assert [a.key for a in addrs] == ["localhost:1", "127.0.0.1:2"]
    assert [a.key for a in parse_addresses(["a:1", "b:2,c:3"])] == ["a:1", "b:2", "c:3"]
    with pytest.raises(AddressError, match="listed twice"):
        parse_addresses("localhost:1,grpc://LOCALHOST:1")
    with pytest.raises(AddressError, match="empty entry"):
        parse_addresses("localhost:1,,localhost:2")
    with pytest.raises(AddressError, match="no address"):
        parse_addresses(" ")
    with pytest.raises(AddressError, match=f"at most {MAX_ADDRESSES}"):
        parse_addresses(",".join(f"h{i}:1" for i in range(MAX_ADDRESSES + 1)))
    with pytest.raises(AddressError, match="must be text"):
        parse_addresses([1])  # type: ignore[list-item]
