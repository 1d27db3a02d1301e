import json

import fastattn
from fastattn.cli import main


def test_info_reports_the_core_and_backends(capsys):
    assert main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["core"]["loaded"] == fastattn.has_cpp()
    assert report["versions"]["torch"]
    assert report["backends"]["torch-reference"]["available"] is True
    assert set(report["backends"]) >= {"triton-cuda", "triton-interpreter", "torch-reference"}


def test_cpp_core_is_loaded():
    """An installed fastattn always has its compiled core; a missing one is a broken install."""
    assert fastattn.has_cpp(), fastattn.info()["core"]["error"]
