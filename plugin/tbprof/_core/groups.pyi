"""Type stubs of the event grouping's compiled passes (groups.pyx)."""

from collections.abc import Sequence

import numpy as np

def matched_rows(a_rows: np.ndarray, a_values: np.ndarray, b_rows: np.ndarray,
                 b_values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None: ...
def merged_nodes(parts: Sequence[np.ndarray], base: int) -> tuple[np.ndarray, list[np.ndarray]]: ...
def nest_nodes(rows: np.ndarray, start_ps: np.ndarray, dur_ps: np.ndarray, node_offsets: np.ndarray, base: int,
               parent_out: np.ndarray, sub_end_out: np.ndarray) -> None: ...
