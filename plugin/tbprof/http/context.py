"""What every route handler gets besides the request: the profiles and the server's settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tbprof.http.guard import Guard
from tbprof.service.profiles import Profiles


@dataclass
class AppContext:
    profiles: Profiles
    capture_enabled: bool = True
    guard: Guard = field(default_factory=Guard)
    settings: dict[str, Any] = field(default_factory=dict)
