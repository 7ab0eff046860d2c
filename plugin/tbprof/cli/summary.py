"""``tbprof summary``: the headline numbers of a profile, as text or JSON."""

from __future__ import annotations

import argparse

from tbprof.cli.common import EXIT_OK, executor_from, pick_run, print_json, profiles_for


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    p.add_argument("--run", default=None)
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    profiles = profiles_for(args.path, args.cache_dir, executor_from(args))
    run = pick_run(profiles, args.run)
    loading = profiles.load_in_background(run, list(run.hosts))
    # Imported while the stores convert (see load_in_background): the analyses behind the summary.
    from tbprof.service.summary import summary

    result = summary(profiles, run)
    loading.join()
    if args.json:
        print_json(result)
        return EXIT_OK
    for key, value in result.items():
        if isinstance(value, list):
            print(f"{key}:")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")
    return EXIT_OK


COMMANDS = {"summary": (configure, run)}
