"""`fastattn.outputs.signals_held`: a Ctrl-C or SIGTERM that arrives while a file and its manifest
entry are written is handled after both, never between them."""

from __future__ import annotations

import _thread
import signal

import pytest

from fastattn.outputs import signals_held


@pytest.fixture
def handlers():
    """Python's own handlers for the test (another test, or Ray, may have left SIGINT ignored)."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for signum, handler in before.items():
        if handler is not None:
            signal.signal(signum, handler)


@pytest.mark.parametrize("deliver", [
    # trips SIGINT as a signal does that reached the process just before the block and that Python
    # handles at its next instruction: under a signal mask alone it raised inside the block
    lambda: _thread.interrupt_main(signal.SIGINT),
    # a signal sent while the block runs
    lambda: signal.raise_signal(signal.SIGINT),
], ids=["pending-before-the-block", "during-the-block"])
def test_ctrl_c_waits_for_the_block(handlers, deliver):
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with signals_held():
            deliver()
            steps.extend(range(3))
    assert steps == [0, 1, 2]


def test_sigterm_reaches_its_own_handler_after_the_block(handlers):
    got = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        with signals_held():
            signal.raise_signal(signal.SIGTERM)
            assert got == []
        assert got == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_without_a_signal_the_handlers_are_restored(handlers):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with signals_held():
        pass
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_manifest_entry_naming_a_path_outside_the_folder_is_ignored(tmp_path):
    """A crafted manifest ("a/../../victim" with the victim's size and hash) must not aim a
    removal outside the folder."""
    import json

    from fastattn.outputs import MANIFEST, Output, sha256

    victim = tmp_path / "victim.txt"
    victim.write_text("years of work")
    out = tmp_path / "out"
    output = Output(out, "reproduce")
    output.write(out / "a.txt", lambda fh: fh.write("x"), "w")
    doc = json.loads((out / MANIFEST).read_text())
    entry = {"size": victim.stat().st_size, "sha256": sha256(victim)}
    doc["files"] |= {"a/../../victim.txt": entry, "../victim.txt": entry, str(victim): entry}
    (out / MANIFEST).write_text(json.dumps(doc))
    assert set(output.manifest()["files"]) == {"a.txt"}
    assert not output.remove(victim) and not output.remove(out / "a" / ".." / ".." / "victim.txt")
    (out / "a").mkdir()
    output.remove_tree(out / "a")
    assert victim.read_text() == "years of work"


def test_removing_a_tree_keeps_a_users_symlink_and_the_folder_around_it(tmp_path):
    """remove_tree deletes fastattn's files; a symlink the user put there (to a folder, whose
    `is_dir` is true) is neither deleted nor followed, so the folder stays."""
    from fastattn.outputs import Output

    data = tmp_path / "data"
    data.mkdir()
    (data / "x.csv").write_text("1,2")
    out = tmp_path / "out"
    output = Output(out, "reproduce")
    output.write(out / "fig" / "run.json", lambda fh: fh.write("{}"), "w")
    (out / "fig" / "mydata").symlink_to(data)
    assert output.remove_tree(out / "fig") == [out / "fig" / "mydata"]
    assert (out / "fig" / "mydata").is_symlink() and (data / "x.csv").read_text() == "1,2"
    assert not (out / "fig" / "run.json").exists()
    (out / "fig" / "mydata").unlink()
    (out / "fig" / "sub").mkdir()                  # nothing but empty folders: all removed
    assert output.remove_tree(out / "fig") == [] and not (out / "fig").exists()
