"""tools/mainali2025_sgd_seeds.py reads --seeds in `fastattn train`'s list grammar
(`configs.options.LIST_GRAMMAR`), not a grammar of its own."""

import importlib.util
from pathlib import Path

import pytest

from fastattn.configs.options import run_list

TOOL = Path(__file__).resolve().parents[2] / "tools" / "mainali2025_sgd_seeds.py"


@pytest.fixture(scope="module")
def parser():
    spec = importlib.util.spec_from_file_location("mainali2025_sgd_seeds", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool.build_parser()


@pytest.mark.parametrize("text", ["0..15", "0,1,2", "0,3,7", "5"])
def test_seeds_are_train_s_list(parser, text):
    assert parser.parse_args(["--seeds", text]).seeds == run_list(text, int)


def test_the_old_range_still_works_with_train_s_deprecation_line(parser):
    with pytest.warns(FutureWarning, match=r"--seeds 0\.\.15"):
        assert parser.parse_args(["--seeds", "0-15"]).seeds == list(range(16))


def test_default_is_eight_seeds(parser):
    assert parser.parse_args([]).seeds == list(range(8))


def test_a_bad_list_is_one_line_naming_seeds(parser, capsys):
    with pytest.raises(SystemExit):
        parser.parse_args(["--seeds", "0,,2"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--seeds" in err and "empty value" in err
