"""``python -m lldsched lab``: the list of decisions, one decision's consequence, and a
clear refusal of an unknown one."""

from __future__ import annotations

import pytest

from lldsched.cli import main
from lldsched.lab import DECISIONS, decision


def test_with_no_decision_the_lab_lists_every_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {row.key} " in out for row in DECISIONS) and len(DECISIONS) == 11


@pytest.mark.parametrize("prog", ["lldsched", "python -m lldsched"])
def test_the_list_says_how_to_run_a_decision_as_the_command_was_called(
    prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ``lldsched`` script's list says ``lldsched lab <decision>``, as its usage
    lines say ``lldsched`` (was: ``python -m lldsched lab`` whichever way it ran)."""
    assert main(["lab"], prog=prog) == 0
    assert capsys.readouterr().out.startswith(f"{prog} lab <decision>  (seconds each;")


def test_a_named_decision_prints_its_consequence_and_its_test(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["lab", "push"]) == 0
    out = capsys.readouterr().out
    assert "12 h late (fake clock)" in out and "0 s late" in out
    assert "test_a_silent_push_leaves_a_task_due_now_behind_the_parked_timer" in out


def test_an_unknown_decision_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["lab", "nope"])
    assert "'nope'" in capsys.readouterr().err
    with pytest.raises(KeyError, match="'nope'"):
        decision("nope")


def test_every_decision_names_tests_that_exist() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for row in DECISIONS:
        for node in (row.lab_test, row.production_test):
            path, name = node.split("::")
            assert f"def {name}(" in (root / path).read_text(), node
