"""Unit tests of tools.mutation_score (the score `make mutation` reports)."""

from __future__ import annotations

import json

import pytest

from tools.mutation_score import main, mutation_score, summary

STATS = {"killed": 85, "survived": 8, "total": 100, "no_tests": 2, "skipped": 0,
         "suspicious": 0, "timeout": 5, "segfault": 0, "check_was_interrupted_by_user": 0}


def test_timeouts_count_as_detected_and_untested_mutants_as_survivors():
    assert mutation_score(STATS) == (90, 100)
    assert summary(STATS) == (
        "mutation score 90.0%: 90 of 100 detected (85 killed, 5 timeout, 8 survived, 2 no tests)"
    )


def test_skipped_mutants_are_not_counted():
    assert mutation_score({**STATS, "skipped": 10}) == (90, 90)


def test_no_mutants_is_an_error():
    with pytest.raises(ValueError, match="no mutants were checked"):
        mutation_score({"total": 3, "skipped": 3})


@pytest.mark.parametrize(("killed", "minimum", "status"), [(85, 90, 0), (84, 90, 1), (84, 89, 0)])
def test_main_fails_below_the_minimum(tmp_path, capsys, killed, minimum, status):
    path = tmp_path / "stats.json"
    path.write_text(json.dumps({**STATS, "killed": killed}))
    assert main([str(path), "--minimum", str(minimum)]) == status
    out = capsys.readouterr().out
    assert out.startswith(f"mutation score {killed + 5}.0%: {killed + 5} of 100 detected")
    assert ("below the minimum" in out) == bool(status)
