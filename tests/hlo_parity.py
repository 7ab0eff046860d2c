"""XProf's op-profile HLO ops beside ours: shared by the FLOP and byte parity tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tbprof.analyses.ops import op_profile
from tbprof.service import tools as registry
from tests.helpers import golden, store_of

PROFILES = ("jax_mlp", "jax_2hosts_worker0", "jax_2hosts_worker1")
XPROF_DUPLICATES = " and its duplicate(s)"  # XProf's suffix for ops deduplicated by name


def xprof_hlo_ops(profile: str) -> list[dict[str, Any]]:
    """The HLO ops (depth 2) of XProf's op profile by category."""
    root = golden(profile, "op_profile")["group_by_category:byCategory"]
    return [op for cat in root["children"] for op in cat.get("children", [])]


def program_id(program: str) -> int:
    """``jit_step(16572)`` -> 16572 (0 for ops without a program)."""
    return int(program.rsplit("(", 1)[1].rstrip(")")) if program.endswith(")") else 0


LeafPair = tuple[tuple[str, int], dict[str, Any], dict[str, Any]]


def op_profile_leaves_vs_xprof(root: Path, profile: str, measure: str,
                               xprof_measure: Callable[[dict[str, Any]], float]
                               ) -> tuple[list[LeafPair], set[tuple[str, int]]]:
    """(key, our leaf, XProf's op) for every HLO op of XProf's op profile, and the keys whose
    occurrences differ from XProf's. XProf shows one op for same-named ops of identical
    programs ("and its duplicate(s)"): ours are summed over the programs for those."""
    tool = registry.get("op_profile")
    assert tool is not None
    result: Mapping[str, Any] = op_profile.compute([store_of(root, profile)], tool.parse_options({}))
    leaves = [leaf for cat in result["by_category"]["children"] for leaf in cat["children"]]
    ours = {(leaf["name"], program_id(leaf.get("program", ""))): leaf for leaf in leaves}
    pairs = []
    merged = set()
    for x in xprof_hlo_ops(profile):
        key = (x["name"].removesuffix(XPROF_DUPLICATES), int(x["program_id"]))
        leaf = ours[key]
        if x["name"].endswith(XPROF_DUPLICATES):
            same = [o for o in leaves if o["name"] == key[0]]
            leaf = {"occurrences": sum(o["occurrences"] for o in same), measure: sum(o[measure] for o in same)}
        if leaf["occurrences"] != x["occurrences"]:
            merged.add(key)
        pairs.append((key, leaf, {"occurrences": x["occurrences"], measure: xprof_measure(x)}))
    return pairs, merged


XPROF_MERGED_PROGRAM = 15245  # jax_2hosts: XProf's program for both jit__normal programs
JAX_2HOSTS_MERGED_OP = "jit(_normal)/jit(_normal_real)/mul"
