"""The command line answers the question asked (issue 41, item 3): one pair's options under
`--help`, "did you mean" for a mistyped option, value or command, one list grammar."""

import pytest

from fastattn.cli import main


@pytest.mark.parametrize(("argv", "line"), [
    (["train", "--heds", "3"], "fastattn train: error: unknown option --heds; did you mean --heads?"),
    (["train", "--heds=3"], "fastattn train: error: unknown option --heds; did you mean --heads?"),
    (["sweep", "--dimm", "4,8"], "fastattn sweep: error: unknown option --dimm; did you mean --dim?"),
    (["train", "--model", "transfomer"],
     "fastattn train: error: --model 'transfomer' is unknown; did you mean --model transformer?"),
    (["train", "--task", "linear_regresion"], "fastattn train: error: --task 'linear_regresion' is "
     "unknown; did you mean --task linear_regression?"),
    (["train", "--method", "flwo"], "fastattn train: error: --method must be one of flow | gd | sgd "
     "| adam | task_sgd; got 'flwo'; did you mean --method flow?"),
    (["trian", "--out", "x"], "fastattn: error: unknown command 'trian'; did you mean fastattn train?"),
])
def test_a_mistyped_name_is_one_line_offering_the_closest_exit_2_before_any_work(
        argv, line, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(line), err
    assert not out.exists()


def test_nothing_close_offers_the_help_or_the_list_instead(capsys):
    assert main(["train", "--nosuch", "1", "--out", "x"]) == 2
    assert "unknown option --nosuch; fastattn train --help lists the options" in capsys.readouterr().err
    assert main(["train", "--model", "zzz", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert "--model 'zzz' is unknown; choose one of merged, " in err and "did you mean" not in err
