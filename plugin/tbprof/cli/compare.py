"""``tbprof compare`` and ``tbprof check``: an A/B comparison in the terminal, and a CI gate.

    tbprof compare BASELINE CANDIDATE [--json] [--base-run R] [--run R] [--base-host H] [--host H]
                   [--base-steps SEL] [--steps SEL] [--base-iterations N,..] [--iterations N,..]
                   [--confidence 0.95] [--cache-dir D]
    tbprof check BASELINE CANDIDATE --max-regression 5% [--op NAME] [same side options]

BASELINE and CANDIDATE are a logdir, a session folder or one profile file (the same path
twice with --base-host/--host compares two hosts of one run). --base-iterations/--iterations
choose the ProfilerStep iterations of HTA's trace diff of two PyTorch runs (default: the first
of each side; several are summed, as HTA's ``control_iteration`` / ``test_iteration`` lists).
``check`` exits 3 when the step
time (or with --op, the op's self time per step) is slower than the bound with confidence:
the lower end of the confidence interval of the change exceeds --max-regression. An
improvement or a change within the step-to-step noise exits 0; 4 when a side has no step
time to compare (see docs/formulas.md, "compare").
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tbprof.analyses.compare import stats as cs
from tbprof.analyses.ops.op_step_time import match_op
from tbprof.analyses.results.compare import CompareResult
from tbprof.analyses.table import Table
from tbprof.cli.common import EXIT_OK, CliError, executor_from, print_json, profiles_for
from tbprof.service.comparisons import SideSpec, compare_sides, gather, op_step_series, parse_iterations
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS, comparison_host, pick_run, select_hosts

EXIT_REGRESSION = 3
EXIT_UNDECIDED = 4


def _side_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", help="logdir, session folder or profile file of the baseline")
    p.add_argument("candidate", help="logdir, session folder or profile file of the candidate")
    for who, prefix in (("baseline", "base-"), ("candidate", "")):
        p.add_argument(f"--{prefix}run", default=None, help=f"run of the {who} when its path holds several")
        p.add_argument(f"--{prefix}host", default=None,
                       help=f"host of the {who} when its run has several ({ALL_HOSTS} for all hosts)")
        p.add_argument(f"--{prefix}steps", default="", metavar="SEL",
                       help=f"restrict the {who}'s step statistics to these step numbers, e.g. 3:6 or 2,4")
        p.add_argument(f"--{prefix}iterations", default="", metavar="N,..",
                       help=f"ProfilerStep numbers of the {who}'s trace diff (PyTorch; default: its first)")
    p.add_argument("--confidence", type=float, default=cs.DEFAULT_CONFIDENCE,
                   help="confidence level of the change's interval (default 0.95)")
    p.add_argument("--cache-dir", default=None, help="converted-profile cache")


def _pick(profiles: Profiles, run_name: str | None, host: str | None, who: str, steps: str,
          iterations: str) -> SideSpec:
    prefix = "--base-" if who == "baseline" else "--"
    run = pick_run(profiles.index.runs(), run_name, where=str(profiles.logdir), choose_with=prefix + "run", who=who)
    select_hosts(run, comparison_host(run, host), choose_with=prefix + "host", who=who)  # refused here, by flag
    return SideSpec(run=run.name, host=host, steps=steps,
                    iterations=parse_iterations(iterations, prefix + "iterations"))


def _sides(args: argparse.Namespace) -> tuple[Profiles, SideSpec, Profiles, SideSpec]:
    executor = executor_from(args)
    base_profiles = profiles_for(args.baseline, args.cache_dir, executor)
    same = Path(args.baseline).resolve() == Path(args.candidate).resolve()
    cand_profiles = base_profiles if same else profiles_for(args.candidate, args.cache_dir, executor)
    if not 0.5 <= args.confidence < 1.0:
        raise CliError(f"--confidence {args.confidence} must be in [0.5, 1)")
    base = _pick(base_profiles, args.base_run, args.base_host, "baseline", args.base_steps, args.base_iterations)
    cand = _pick(cand_profiles, args.run, args.host, "candidate", args.steps, args.iterations)
    return base_profiles, base, cand_profiles, cand


def _result(args: argparse.Namespace) -> tuple[CompareResult, Profiles, SideSpec, Profiles, SideSpec]:
    bp, base, cp, cand = _sides(args)
    result = compare_sides(gather(bp, base), gather(cp, cand), args.confidence)
    return result, bp, base, cp, cand


def _num(x: Any, fmt: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(float(x), fmt)


def _top(table: Table, n: int) -> list[int]:
    return list(range(min(n, table.n_rows)))


def print_text(result: CompareResult, out: Any = None) -> None:
    w = (out or sys.stdout).write
    for who in ("baseline", "candidate"):
        s = result[who]
        w(f"{who:9}  {s['label']}  ({s['step_count']} steps, {s['step_source'] or 'no step analysis'})\n")
    w(f"verdict    {result['verdict']['summary']}\n\n")
    st = result["step_time"]
    if st is not None:
        w(f"{'step time (ms)':16}{'median':>10}{'p10':>10}{'p90':>10}{'mean':>10}{'stddev':>10}{'steps':>7}\n")
        for who, dist in (("baseline", st["baseline"]), ("candidate", st["candidate"])):
            w(f"  {who:14}{_num(dist['median_ms']):>10}{_num(dist['p10_ms']):>10}{_num(dist['p90_ms']):>10}"
              f"{_num(dist['mean_ms']):>10}{_num(dist['stddev_ms']):>10}{dist['count']:>7}\n")
        c = st["change"]
        lo, hi = c["ci_low_percent"], c["ci_high_percent"]
        ci = f"{_num(lo, '+.1f')} … {_num(hi, '+.1f')} %" if lo is not None else "n/a (too few steps)"
        w(f"  change        {_num(c['change_percent'], '+.1f')} % ({round(100 * c['confidence'])} % CI {ci}); "
          f"{c['direction']}\n\n")
    tables = result.get("tables", {})
    bd = tables.get("breakdown")
    if isinstance(bd, Table):
        w("step breakdown (per step, share of step time)\n")
        for i in range(bd.n_rows):
            if bd.data["base_ms"][i] == 0 and bd.data["cand_ms"][i] == 0:
                continue
            w(f"  {bd.data['label'][i]:34}{_num(bd.data['base_ms'][i]):>10} ms ({bd.data['base_percent'][i]:5.1f} %)"
              f" -> {_num(bd.data['cand_ms'][i]):>10} ms ({bd.data['cand_percent'][i]:5.1f} %)"
              f"  Δ {_num(bd.data['delta_ms'][i], '+.3f')} ms\n")
        w("\n")
    for name, title, key, time_col in (("op_types", "op types", "type", "total_self_time_us"),
                                       ("ops", "ops", "operation", "total_self_time_us"),
                                       ("kernels", "kernels", "kernel_name", "total_duration_us")):
        t = tables.get(name)
        if not isinstance(t, Table) or t.n_rows == 0:
            continue
        per_step = not np.all(np.isnan(t.data["delta_per_step_us"]))
        col = "delta_per_step_us" if per_step else f"delta_{time_col}"
        w(f"{title}: largest changes ({'µs per step' if per_step else 'µs total'})\n")
        for i in _top(t, 10):
            where = f"{t.data['host_or_device'][i]:6} " if "host_or_device" in t.data else ""
            w(f"  {_num(t.data[col][i], '+12.1f')}  {t.data['status'][i]:7} {where}{t.data[key][i]}\n")
        w("\n")
    td = tables.get("trace_diff")
    if isinstance(td, Table) and td.n_rows:
        info = result["trace_diff"]
        changes = ", ".join(f"{n} {k}" for k, n in (info["changes"] if info else {}).items() if n)
        def its(key: str) -> str:
            return ",".join(map(str, info[key])) if info else "-"  # type: ignore[literal-required]

        w(f"ops and kernels (HTA trace diff, iterations {its('baseline_iterations')} -> "
          f"{its('candidate_iterations')}; {changes}): largest changes (µs)\n")
        for i in range(min(td.n_rows, 10)):
            d = td.data
            w(f"  {_num(d['diff_duration_us'][i], '+12.1f')}  {d['change'][i]:9} "
              f"{d['baseline_count'][i]:>5} -> {d['candidate_count'][i]:<5} {d['name'][i]}\n")
        w("\n")
    mem = tables.get("memory_allocators")
    if isinstance(mem, Table) and mem.n_rows:
        w("memory: peak in use (fragmentation at the peak)\n")
        for i in range(mem.n_rows):
            def mb(x: float) -> str:
                return "-" if math.isnan(x) else f"{x / 2**20:.1f} MiB"

            def fr(x: float) -> str:
                return "-" if math.isnan(x) else f"{100 * x:.1f} %"

            d = mem.data
            w(f"  {d['memory_id'][i]:28} {mb(d['base_peak_bytes'][i])} ({fr(d['base_peak_fragmentation_fraction'][i])})"
              f" -> {mb(d['cand_peak_bytes'][i])} ({fr(d['cand_peak_fragmentation_fraction'][i])})\n")
        w("\n")
    for section, why in result["unavailable"].items():
        w(f"unavailable: {section}: {why}\n")
    for note in result["notes"]:
        w(f"note: {note}\n")


def cmd_compare(args: argparse.Namespace) -> int:
    result = _result(args)[0]
    if args.json:
        print_json(result)
    else:
        print_text(result)
    return EXIT_OK


def parse_bound(text: str) -> float:
    """"5%", "5" -> 5.0 (percent). A bound is a percentage of the baseline."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise CliError(f"--max-regression {text!r}: expected a percentage like 5%") from None
    if not math.isfinite(value) or value < 0:
        raise CliError(f"--max-regression {text!r} must be a percentage >= 0")
    return value


def decide(change: cs.Shift, bound_percent: float) -> tuple[str, int]:
    """("regression" | "improvement" | "noise" | "possible regression" | "undecided", exit code)."""
    if change.low is None or change.high is None:
        return "undecided", EXIT_UNDECIDED
    if change.low > bound_percent:
        return "regression", EXIT_REGRESSION
    if change.high < 0:
        return "improvement", EXIT_OK
    if change.estimate > bound_percent:
        return "possible regression", EXIT_OK
    if change.low > 0:
        return "slower within the bound", EXIT_OK
    return "noise", EXIT_OK


def _shift_of(result: CompareResult) -> cs.Shift | None:
    st = result["step_time"]
    if st is None:
        return None
    c = st["change"]
    # A NaN estimate is null in the typed answer (the JSON's view): back to NaN for the decision.
    estimate = c["change_percent"]
    return cs.Shift(float("nan") if estimate is None else estimate, c["ci_low_percent"], c["ci_high_percent"],
                    c["confidence"], c["method"],
                    st["baseline"]["count"], st["candidate"]["count"])


def cmd_check(args: argparse.Namespace) -> int:
    bound = parse_bound(args.max_regression)
    bp, base, cp, cand = _sides(args)
    base_in, cand_in = gather(bp, base), gather(cp, cand)
    what = "step time"
    per_step: dict[str, float] = {}
    if args.op:
        bm, cm = match_op(base_in.op_stats, args.op), match_op(cand_in.op_stats, args.op)
        if bm is None and cm is None:
            raise CliError(f"--op {args.op!r} matches no operation name, operation type or (regex) name in "
                               "either profile")
        b_series = op_step_series(bp, base, bm.names if bm else [])
        c_series = op_step_series(cp, cand, cm.names if cm else [])
        how = (bm or cm).how  # type: ignore[union-attr]
        what = f"{'op type' if how == 'type' else 'op'} {args.op!r} self time per step"
        if b_series is None or c_series is None:
            shift = None
        else:
            shift = cs.relative_shift(b_series, c_series, args.confidence)
            per_step = {"baseline_mean_us": float(np.mean(b_series)), "candidate_mean_us": float(np.mean(c_series))}
        result: CompareResult | None = None
    else:
        result = compare_sides(base_in, cand_in, args.confidence)
        shift = _shift_of(result)
    if shift is None:
        decision, code = "undecided", EXIT_UNDECIDED
    else:
        decision, code = decide(shift, bound)
    ci = ("n/a" if shift is None or shift.low is None
          else f"{_num(shift.low, '+.1f')} … {_num(shift.high, '+.1f')} %")
    est = "n/a" if shift is None else f"{_num(shift.estimate, '+.1f')} %"
    why = {
        "regression": f"slower than the +{bound:g} % bound with {round(100 * args.confidence)} % confidence",
        "possible regression": f"estimate beyond +{bound:g} % but within the noise (not failing)",
        "improvement": "faster with confidence",
        "noise": "within the step-to-step noise",
        "slower within the bound": f"slower with confidence, but not beyond +{bound:g} %",
        "undecided": "a side has no steps to compare (no step markers and none inferred)",
    }[decision]
    line = f"{decision.upper()}: {what} {est} ({round(100 * args.confidence)} % CI {ci}): {why}"
    if args.json:
        out = {"decision": decision, "exit_code": code, "what": what, "max_regression_percent": bound,
               "change_percent": None if shift is None else shift.estimate,
               "ci_low_percent": None if shift is None else shift.low,
               "ci_high_percent": None if shift is None else shift.high,
               "confidence": args.confidence, **per_step,
               "verdict": result["verdict"]["summary"] if result else None}
        print_json(out)
    else:
        print(line)
        if result is not None:
            print(f"verdict: {result['verdict']['summary']}")
    return code


def _configure_compare(p: argparse.ArgumentParser) -> None:
    p.description = "Compare a baseline and a candidate profile: step time with confidence, breakdown, ops, memory."
    _side_options(p)
    p.add_argument("--json", action="store_true", help="the whole comparison as JSON (docs/api.md)")


def _configure_check(p: argparse.ArgumentParser) -> None:
    p.description = ("Exit 3 when the candidate's step time (or --op's self time per step) regresses beyond "
                     "--max-regression with confidence; 0 on improvement or noise; 4 when undecidable.")
    _side_options(p)
    p.add_argument("--max-regression", required=True, metavar="PCT", help="allowed slowdown, e.g. 5%%")
    p.add_argument("--op", default=None, metavar="NAME",
                   help="check this op instead of the step time: an operation name, an op type, or a regex")
    p.add_argument("--json", action="store_true")


COMMANDS = {"compare": (_configure_compare, cmd_compare), "check": (_configure_check, cmd_check)}
