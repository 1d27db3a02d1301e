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
    (["train", "--model", "transfomer", "--help"],
     "fastattn train: error: --model 'transfomer' is unknown; did you mean --model transformer?"),
    (["sweep", "--task", "autoregressive", "--model", "separate", "--help"], "fastattn sweep: error: "
     "--model separate does not pair with --task autoregressive; models for autoregressive: diag"),
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


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["train", "sweep"])
def test_help_without_a_pair_lists_the_pairs_and_how_to_ask_not_every_option(command, capsys):
    from fastattn.configs import pairs

    out = _help([command, "--help"], capsys)
    flat = " ".join(out.split())
    for task, models in pairs().items():
        assert f"--task {task} (" in flat and " | ".join(models) in flat
    assert f"fastattn {command} --task T --model M --help: that pair's options" in flat
    assert "--rank RANK" not in out and "--context-dist" not in out     # one family's, another's
    everything = _help([command, "--help-all"], capsys)
    assert "--rank RANK" in everything and "--context-dist" in everything
    assert len(out.splitlines()) < len(everything.splitlines()) / 3


@pytest.mark.parametrize("where", ["after", "before"])
def test_help_with_a_pair_shows_only_its_options_and_preset_values(where, capsys):
    pair = ["--task", "linear_regression", "--model", "separate"]
    out = _help(["train", *pair, "--help"] if where == "after" else ["train", "--help", *pair], capsys)
    assert out.startswith("usage: fastattn train")
    for line in ("--rank RANK: key/query rank R (default: 1)",
                 "--heads HEADS: number of heads H (default: 5)",
                 "--spectrum SPECTRUM: eigenvalues of Λ",
                 "with --task linear_regression: docs/zhang2025.md, Fig. 3"):
        assert line in out, line
    assert "(default: 100000)" in out[out.index("--t-end T_END"):].split("\n  --")[0]
    for other in ("--scale", "--context-dist", "--layers", "--lr LR", "--batch-size", "--out OUT"):
        assert other not in out, other           # other families', other methods', the command's
    sgd = _help(["train", *pair, "--method", "sgd", "--help"], capsys)
    assert "--batch-size BATCH_SIZE" in sgd and "--t-end T_END" not in sgd
    he = " ".join(_help(["train", "--task", "linear_regression", "--model", "multihead_softmax",
                         "--help"], capsys).split())
    assert "--w-var W_VAR: task prior Σ_w = VAR·I (He et al.: 1/D; default Σ_w = I) (default: 1/D)" in he


def _shown_defaults(text: str) -> dict[str, str]:
    """--flag → the "(default: X)" of each option line of a pair's help."""
    import re

    joined = re.sub(r"\n {6}", " ", text)          # an option's wrapped lines
    return {m[1]: m[2] for m in re.finditer(r"^  (--[\w-]+) [A-Z_]+: .*\(default: ([^()\s]*)\)$",
                                            joined, re.M)}


def test_every_pair_s_help_shows_the_values_its_train_and_sweep_runs_take(capsys):
    """Independent truth: the values `train` resolves (configs.resolve) and those each sweep run
    resolves (sweep.grid.resolve, with the sweep's own trainer defaults): ~1 CPU s."""
    from fastattn.cli_options import _show
    from fastattn.configs import options_for, pairs, resolve
    from fastattn.configs.options import one_value
    from fastattn.sweep.grid import parse_axis
    from fastattn.sweep.grid import resolve as sweep_resolve

    checked = 0
    for task, models in pairs().items():
        for model in models:
            flags = {o.flag: o for o in options_for(task, model)}
            for command, runs in (("train", resolve(task, model).spec()),
                                  ("sweep", sweep_resolve({"task": task, "model": model}))):
                shown = _shown_defaults(_help([command, "--task", task, "--model", model, "--help"],
                                              capsys))
                assert "--method" in shown, (command, task, model)
                for flag, text in shown.items():
                    o = flags[flag]
                    value = runs[o.target].get(o.field)
                    if text != "1/D":                    # He's preset, evaluated per run's D
                        assert text == _show(value, o.name), (command, task, model, flag, text)
                        # the text shown, typed back, is that one value in train and in sweep
                        assert _plain(o.convert(one_value(o.name, text))) == _plain(value)
                        assert _plain(parse_axis(o.name, text)) == [_plain(value)]
                        checked += 1
    assert checked > 500


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


@pytest.mark.parametrize(("pair", "name", "slashes", "value"), [
    ((), "context", "8/16", [8, 16]),
    ((), "spectrum", "0.4/0.3/0.2/0.1", "0.4,0.3,0.2,0.1"),
    ((), "w_mean", "1/0/0/0", [1.0, 0.0, 0.0, 0.0]),
    ((), "betas", "0.9/0.99", [0.9, 0.99]),
    (("multitask_regression", "multioutput_softmax"), "supports", "0/1;1/2", [[0, 1], [1, 2]]),
])
def test_a_list_value_is_written_with_slashes_in_train_and_sweep_alike(pair, name, slashes, value):
    """One grammar (LIST_GRAMMAR): the elements of a list value are separated by '/' in both
    commands; train also takes ',' there, a sweep reads ',' as its axis' values."""
    from fastattn.cli import build_parser
    from fastattn.cli_options import given
    from fastattn.sweep.grid import parse_axis

    flag = "--" + name.replace("_", "-")
    head = ["train", *(["--task", pair[0], "--model", pair[1]] if pair else []), "--out", "x"]
    parser = build_parser("train")
    target = {"betas": "train"}.get(name, "task")
    for text in (slashes, slashes.replace("/", ",")):
        _, _, values = given(parser.parse_args([*head, flag, text]))
        assert _plain(values[target][name]) == value
    assert _plain(parse_axis(name, slashes)) == [value]
    assert len(parse_axis(name, f"{slashes},{slashes}")) == 2       # an axis of two list values


def test_seeds_take_the_range_form_of_context_and_the_old_form_with_a_note():
    from fastattn.configs.options import run_list

    assert run_list("0..4") == run_list("0,1,2,3,4") == [0, 1, 2, 3, 4]
    with pytest.warns(FutureWarning, match=r"^--seeds 2-4 is deprecated; write --seeds 2\.\.4"):
        assert run_list("2-4") == [2, 3, 4]


@pytest.mark.parametrize("argv", [["train", "--seeds", "0,,2"],
                                  ["train", "--method", "adam", "--lr", "1e-3,"],
                                  ["sweep", "--dim", "4,,8"]])
def test_an_empty_value_in_a_list_is_refused_not_dropped(argv, tmp_path, capsys):
    try:
        code = main([*argv, "--out", str(tmp_path / "o")])
    except SystemExit as stop:             # a sweep axis fails inside argparse (its one line)
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has an empty value; separate values by single commas" in err
    assert not (tmp_path / "o").exists()


def test_train_and_sweep_help_state_the_one_list_grammar(capsys):
    from fastattn.configs.options import LIST_GRAMMAR

    for command in ("train", "sweep"):
        assert " ".join(LIST_GRAMMAR.split()) in " ".join(_help([command, "--help"], capsys).split())


def test_a_list_of_learning_rates_is_lr_s_list_as_in_a_sweep_and_lrs_still_works(tmp_path, capsys,
                                                                                  monkeypatch):
    """--lr 1e-3,1e-2 trains one run per value (sweep's axis grammar); --lrs, its old name, gives
    the same runs with a one-line note. Stops before training: ~0.3 CPU s."""
    import fastattn.training
    from fastattn import cli

    seen = []
    monkeypatch.setattr(cli, "check_output", lambda out, name, overwrite: seen.append(name))
    monkeypatch.setattr(fastattn.training, "train_many", lambda *a, **k: None)
    base = ["train", "--model", "multihead_softmax", "--method", "adam", "--steps", "3",
            "--out", str(tmp_path), "--quiet"]
    assert main([*base, "--lr", "1e-3,1e-2"]) == 0
    assert seen == ["run-lr0.001", "run-lr0.01"] and capsys.readouterr().err == ""
    seen.clear()
    assert main([*base, "--lrs", "1e-3,1e-2"]) == 0
    assert seen == ["run-lr0.001", "run-lr0.01"]
    assert capsys.readouterr().err == ("fastattn train: warning: --lrs 1e-3,1e-2 is deprecated; write "
                                       "--lr 1e-3,1e-2 (a list: one run per value, as in a sweep) "
                                       "(the old form still works for now)\n")
    assert main(["train", "--method", "flow", "--lr", "1e-3,1e-2", "--out", str(tmp_path)]) == 2
    assert "--lr does not apply to --method flow" in capsys.readouterr().err


#: the four options renamed to their fields' names (issue 41 item 3), old flag → new
RENAMED_FLAGS = {"--time": "--t-end", "--init": "--init-scale", "--records": "--n-records",
                 "--snapshots": "--n-snapshots"}


@pytest.mark.parametrize("command", ["train", "sweep"])
def test_an_option_is_its_field_and_an_old_name_still_works_with_one_line(command, tmp_path,
                                                                          capsys):
    """The help shows each option under its field's name only (`--t-end` for `t_end`,
    docs/conventions.md "Names"); an old flag parses to the same value after one deprecation line naming
    the new (train: `given`; sweep: the grid). ~1 CPU s (train: a flow of 2 × 2 parameters)."""
    from fastattn.cli import build_parser
    from fastattn.cli_options import given
    from fastattn.sweep.grid import grid_from_args

    parser = build_parser(command)
    read = (lambda args: given(args)[2]) if command == "train" else \
        (lambda args: grid_from_args(args).axes)
    head = [command, "--out", str(tmp_path / "o")]
    for old, new in RENAMED_FLAGS.items():
        want = read(parser.parse_args([*head, new, "3"]))
        with pytest.warns(FutureWarning, match=f"^{old} is deprecated; write {new} "):
            assert read(parser.parse_args([*head, old, "3"])) == want
    listed = " ".join(_help([command, "--help-all"], capsys).split())
    assert "--t-end" in listed and not any(f"{old} " in listed for old in RENAMED_FLAGS)
    assert main([command, "--dry-run" if command == "sweep" else "--quiet", "--model", "separate",
                 "--dim", "2", "--heads", "2", "--time", "1", "--records", "20",
                 "--out", str(tmp_path / "s")]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "warning" in line] == [
        f"fastattn {command}: warning: --time is deprecated; write --t-end (the old form still "
        "works for now)", f"fastattn {command}: warning: --records is deprecated; write "
        "--n-records (the old form still works for now)"]
