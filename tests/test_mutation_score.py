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


def test_statistics_without_the_optional_counts():
    # Only `total` is required; a count that is not there is 0.
    assert mutation_score({"total": 1, "killed": 1}) == (1, 1)
    assert mutation_score({"total": 4, "timeout": 1, "segfault": 2}) == (3, 4)
    assert summary({"total": 4, "killed": 2, "survived": 2}) == (
        "mutation score 50.0%: 2 of 4 detected (2 killed, 2 survived)"
    )


def test_summary_names_every_kind_of_ending():
    stats = {"total": 6, "killed": 1, "timeout": 1, "segfault": 1, "survived": 1, "no_tests": 1,
             "suspicious": 1, "skipped": 0}
    assert summary(stats) == (
        "mutation score 50.0%: 3 of 6 detected (1 killed, 1 timeout, 1 segfault, 1 survived, "
        "1 no tests, 1 suspicious)"
    )


def test_the_minimum_is_a_percentage_compared_exactly(tmp_path, capsys):
    path = tmp_path / "stats.json"
    path.write_text(json.dumps({"total": 99, "killed": 89}))  # 89.9%
    assert main([str(path)]) == 1  # the default minimum is 90
    assert main([str(path), "--minimum", "89.8"]) == 0
    path.write_text(json.dumps({"total": 10, "killed": 9}))  # exactly 90%
    assert main([str(path)]) == 0
    capsys.readouterr()


def test_main_reads_mutmuts_file_by_default(tmp_path, capsys, monkeypatch):
    (tmp_path / "mutants").mkdir()
    (tmp_path / "mutants" / "mutmut-cicd-stats.json").write_text(json.dumps(STATS))
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("mutation score 90.0%")


def test_main_explains_itself(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "The mutation score of ``make mutation``, from the statistics mutmut exports." in text
    assert "--minimum MINIMUM percent (default 90)" in text
    assert "[stats]" in text
