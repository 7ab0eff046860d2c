"""``--dask-security``: the TLS certificates tbprof's Dask client presents and trusts.

A Dask cluster runs whatever its clients submit, so one tbprof talks to should take only
clients holding a certificate its CA signed (Dask's mutual TLS, ``tls://`` addresses). The
value names the client's side of that in one of two forms:

* ``ca-file=CA.pem,cert=CLIENT.pem[,key=CLIENT.key]``: the CA that signed the scheduler's
  certificate, and the client's certificate and key (the key may be appended to the cert
  file, as Dask allows);
* ``PATH``: a YAML file in Dask's configuration format, whose ``distributed.comm.tls`` block
  (``ca-file``, ``client.cert``, ``client.key``, optionally ``ciphers``, ``min-version``) is
  read; the same file the cluster's own ``~/.config/dask/*.yaml`` would hold.

Either way the result is a ``distributed.security.Security`` that requires encryption, built
from these values alone (not merged with the process's Dask configuration, so what the flag
says is what is used). Files are checked to exist here, so a typo is a usage error naming the
file, not a TLS failure on connect.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distributed.security import Security

DASK_SECURITY_ENV = "TBPROF_DASK_SECURITY"

# Inline key -> Security's parameter.
_INLINE_KEYS = {"ca-file": "tls_ca_file", "cert": "tls_client_cert", "key": "tls_client_key"}
# ssl is imported only where a TLS cluster is set up: every command imports this module.
_TLS_VERSIONS = ("1.2", "1.3")
# A Dask configuration file is a few lines; anything larger is not one.
_MAX_CONFIG_BYTES = 1 << 20


def security_spec(flag_value: str | None) -> str | None:
    """The flag's value, else ``$TBPROF_DASK_SECURITY``, else None (no TLS of tbprof's own)."""
    return flag_value or os.environ.get(DASK_SECURITY_ENV, "").strip() or None


def parse_security(spec: str) -> dict[str, Any]:
    """``spec`` (either form above) as ``Security``'s keyword arguments; ValueError if it is
    neither, or names a file that is not there."""
    if "=" in spec and not Path(spec).is_file():
        fields = _inline_fields(spec)
    else:
        fields = _config_file_fields(Path(spec).expanduser())
    if "tls_ca_file" not in fields or "tls_client_cert" not in fields:
        raise ValueError(f"--dask-security {spec}: needs the CA file and the client certificate "
                         "(ca-file=CA.pem,cert=CLIENT.pem[,key=CLIENT.key], or a Dask YAML file with "
                         "distributed.comm.tls.ca-file and .client.cert)")
    for name in ("tls_ca_file", "tls_client_cert", "tls_client_key"):
        if name in fields and not Path(fields[name]).expanduser().is_file():
            raise ValueError(f"--dask-security: no such file: {fields[name]}")
        if name in fields:
            fields[name] = str(Path(fields[name]).expanduser())
    return fields


def _inline_fields(spec: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _INLINE_KEYS or not value.strip():
            raise ValueError(f"--dask-security: {part!r} is not one of {', '.join(k + '=PATH' for k in _INLINE_KEYS)}")
        fields[_INLINE_KEYS[key]] = value.strip()
    return fields


def _config_file_fields(path: Path) -> dict[str, Any]:
    import yaml

    try:
        with path.open("rb") as f:
            text = f.read(_MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ValueError(f"--dask-security: cannot read {path}: {e.strerror or e}") from None
    if len(text) > _MAX_CONFIG_BYTES:
        raise ValueError(f"--dask-security: {path} is larger than a Dask configuration file")
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"--dask-security: {path} is not YAML: {e}") from None
    tls = _get(config, "distributed", "comm", "tls")
    if not isinstance(tls, dict):
        raise ValueError(f"--dask-security: {path} has no distributed.comm.tls block")
    fields: dict[str, Any] = {}
    for value, name in ((tls.get("ca-file"), "tls_ca_file"), (_get(tls, "client", "cert"), "tls_client_cert"),
                        (_get(tls, "client", "key"), "tls_client_key"), (tls.get("ciphers"), "tls_ciphers")):
        if value is not None:
            if not isinstance(value, str):
                raise ValueError(f"--dask-security: {path}: {name} must be a string")
            fields[name] = value
    version = tls.get("min-version")
    if version is not None:
        if str(version) not in _TLS_VERSIONS:
            raise ValueError(f"--dask-security: {path}: min-version must be one of {', '.join(_TLS_VERSIONS)}")
        import ssl

        fields["tls_min_version"] = ssl.TLSVersion[f"TLSv1_{str(version)[-1]}"]
    return fields


def _get(config: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(config, dict):
            return None
        config = config.get(key)
    return config


def has_dask_tls_config() -> bool:
    """Whether Dask's own configuration names a client certificate (what a client given no
    ``--dask-security`` presents to a ``tls://`` scheduler)."""
    import dask.config

    return bool(dask.config.get("distributed.comm.tls.client.cert", None))


def make_security(spec: str) -> Security:
    """The ``Security`` of ``spec``: encryption required, these certificates only."""
    from distributed.security import Security

    fields = {"tls_ciphers": None, "tls_client_key": None, "tls_min_version": None, "tls_max_version": None,
              **parse_security(spec)}
    return Security(require_encryption=True, **fields)
