"""The TensorBoard plugin: mounts the tbprof WSGI app at /data/plugin/tbprof/."""

from __future__ import annotations

import logging
import os
from typing import Any

from tensorboard.plugins import base_plugin

from tbprof.errors import TbprofError

PLUGIN_NAME = "tbprof"


class TbprofPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        logdir = context.logdir or ""
        flags = context.flags
        cache_dir = getattr(flags, "tbprof_cache_dir", None) or os.environ.get("TBPROF_CACHE_DIR")
        no_capture = bool(getattr(flags, "tbprof_no_capture", False)) or os.environ.get("TBPROF_NO_CAPTURE") == "1"
        self._logdir = logdir or None  # a path or an fsspec URL (s3://, gs://, ...)
        # Imported here, not at module level: TensorBoard imports every plugin's loader at start,
        # and the app (werkzeug routes, analyses) is only needed once tbprof's plugin is built.
        from tbprof.http.app import PLUGIN_PREFIX, create_app
        from tbprof.service.executor import Executor, InProcess, make_executor

        executor: Executor
        try:
            executor = make_executor(getattr(flags, "tbprof_workers", None),
                                     getattr(flags, "tbprof_dask_scheduler", None),
                                     getattr(flags, "tbprof_dask_security", None))
        except ValueError as e:  # a wrong scheduler address must not take TensorBoard down
            logging.getLogger("tbprof").error("tbprof: %s; converting in TensorBoard's process instead", e)
            executor = InProcess()
        executor.start()
        enable_capture = bool(getattr(flags, "tbprof_enable_capture", False))
        allowed = [h for v in (getattr(flags, "tbprof_allowed_host", None) or []) for h in str(v).split(",")]
        # Where TensorBoard listens (program.py): every interface with --bind_all, else --host
        # or, by default, localhost.
        bind_host = "0.0.0.0" if getattr(flags, "bind_all", False) else (getattr(flags, "host", None) or "localhost")
        self._app = create_app(self._logdir or "/nonexistent", cache_dir=cache_dir or None,
                               prefix=PLUGIN_PREFIX, capture_enabled=not no_capture, executor=executor,
                               bind_host=bind_host, allowed_hosts=allowed, enable_capture=enable_capture)

    def get_plugin_apps(self) -> dict[str, Any]:
        # One prefix route: TensorBoard hands every /data/plugin/tbprof/... request to our app.
        return {"/*": self._app}

    def is_active(self) -> bool:
        if self._logdir is None:
            return False
        try:
            return bool(self._app.ctx.profiles.index.runs())
        except (OSError, TbprofError):  # unreadable storage: the tab stays hidden, the log says why
            return False

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="tbprof")


class TbprofLoader(base_plugin.TBLoader):
    """Adds tbprof's flags to TensorBoard's command line."""

    def define_flags(self, parser: Any) -> None:
        group = parser.add_argument_group("tbprof")
        group.add_argument("--tbprof_cache_dir", default=None,
                           help="Where tbprof keeps converted profiles (default: $TBPROF_CACHE_DIR or "
                                "~/.cache/tbprof). Never inside the logdir.")
        group.add_argument("--tbprof_workers", type=int, default=None,
                           help="Processes converting a pod's hosts in parallel (default: $TBPROF_WORKERS or the "
                                "number of cores; 1 = inside TensorBoard's process).")
        group.add_argument("--tbprof_dask_scheduler", default=None,
                           help="Convert hosts on this Dask cluster (default: $TBPROF_DASK_SCHEDULER); its "
                                "workers must reach the same --tbprof_cache_dir.")
        group.add_argument("--tbprof_dask_security", default=None,
                           help="TLS certificates for a tls:// --tbprof_dask_scheduler: a Dask YAML configuration "
                                "file (distributed.comm.tls) or ca-file=CA.pem,cert=CLIENT.pem[,key=CLIENT.key] "
                                "(default: $TBPROF_DASK_SECURITY).")
        group.add_argument("--tbprof_no_capture", action="store_true",
                           help="Hide Capture Profile: the TensorBoard machine then opens no connections "
                                "to profiler servers.")
        group.add_argument("--tbprof_enable_capture", action="store_true",
                           help="Allow Capture Profile when TensorBoard is reachable from other machines "
                                "(--bind_all or a non-loopback --host); off there by default.")
        group.add_argument("--tbprof_allowed_host", action="append", default=None, metavar="NAME",
                           help="A host name tbprof's routes may be reached under besides localhost "
                                "(repeatable or comma-separated); other Host headers get a 403 "
                                "(DNS-rebinding protection).")

    def load(self, context: base_plugin.TBContext) -> base_plugin.TBPlugin:
        return TbprofPlugin(context)
