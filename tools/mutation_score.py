"""The mutation score of ``make mutation``, from the statistics mutmut exports.

``mutmut export-cicd-stats`` writes ``mutants/mutmut-cicd-stats.json``: how many mutants of
``helpers/`` and ``tools/`` the unit tests killed, how many survived, and so on.
``python -m tools.mutation_score [PATH] [--minimum 90]`` prints the score and exits with
status 1 when it is below the minimum. A mutant that made the tests run past mutmut's time
limit (an endless loop) counts as killed; one that no test runs counts as survived.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["DEFAULT_STATS", "mutation_score", "summary"]

DEFAULT_STATS = Path("mutants") / "mutmut-cicd-stats.json"
DETECTED = ("killed", "timeout", "segfault")


def mutation_score(stats: Mapping[str, int]) -> tuple[int, int]:
    """(detected, total): the mutants the tests detected, and every mutant checked."""
    total = stats["total"] - stats.get("skipped", 0)
    if total < 1:
        raise ValueError(f"no mutants were checked: {dict(stats)}")
    return sum(stats.get(name, 0) for name in DETECTED), total


def summary(stats: Mapping[str, int]) -> str:
    """One line: the score and how the mutants ended."""
    detected, total = mutation_score(stats)
    parts = ", ".join(
        f"{stats.get(name, 0)} {name.replace('_', ' ')}"
        for name in ("killed", "timeout", "segfault", "survived", "no_tests", "suspicious")
        if stats.get(name, 0)
    )
    return f"mutation score {100 * detected / total:.1f}%: {detected} of {total} detected ({parts})"


def main(argv: list[str] | None = None) -> int:
    """Print the score; the exit status is 1 below ``--minimum`` percent."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stats", nargs="?", type=Path, default=DEFAULT_STATS)
    parser.add_argument("--minimum", type=float, default=90.0, help="percent (default 90)")
    args = parser.parse_args(argv)
    stats = json.loads(args.stats.read_text(encoding="utf-8"))
    print(summary(stats))
    detected, total = mutation_score(stats)
    if 100 * detected < args.minimum * total:
        print(f"below the minimum of {args.minimum:g}%: `mutmut results` lists the survivors")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
