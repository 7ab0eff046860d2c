"""Type stubs of the Chrome reader's compiled passes (chrome_pass.pyx)."""

import numpy as np

def phase_pass(ph_tok: np.ndarray, ph_table: np.ndarray, flags: np.ndarray, ts_us: np.ndarray, ts_sub_ps: np.ndarray,
               dur_ps: np.ndarray, codes: np.ndarray, other_counts: np.ndarray, flag_empty: int, ph_none: int,
               ph_m: int, ph_other: int, no_time: int, max_abs_ts_us: int, max_span_ps: int,
               ) -> tuple[int, int, bool, int, int, bool, int, int, int, int]: ...
def kept_events(codes: np.ndarray, ph_code: int, ts_us: np.ndarray, ts_sub_ps: np.ndarray, dur_ps: np.ndarray,
                lo: int, hi: int, t0_us: int, t0_sub: int, no_time: int, complete: bool, max_span_ps: int,
                ) -> tuple[np.ndarray, np.ndarray, int, int, int, bool, int]: ...
def first_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
