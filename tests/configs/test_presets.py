"""`fastattn train --task T --model M` alone runs the canonical setup of the paper the pair comes
from (issue 24 item 2): the CLI's default run, as `fastattn train` builds it, against the values
the specs state (/work/shared/specs, quoted beside each check)."""

from __future__ import annotations

import numpy as np
import pytest

from fastattn.cli import build_parser
from fastattn.cli_options import build_run, resolve_args


def cli_run(*argv: str):
    """(resolved values, task, model, TrainConfig) of `fastattn train ARGV --out x`."""
    r = resolve_args(build_parser().parse_args(["train", *argv, "--out", "x"]))
    return (r, *build_run(r.spec()))


def test_he2025_default_is_the_paper_setup():
    """spec he2025 §2.1/§3.2: "Defaults unless stated otherwise: isotropic, d=5, L=40, σ²=0.1, Adam
    1e-3, batch 256, 5e5 steps, default init"; β ~ N(0, I_d/d); the text's model has H = 2."""
    for model_kind in ("multihead_softmax", "multihead_linear"):
        r, task, model, cfg = cli_run("--task", "linear_regression", "--model", model_kind)
        assert r.preset.name == "he2025"
        assert (task.dim, task.context, task.noise) == (5, 40, 0.1)
        np.testing.assert_allclose(task.cov_matrix, np.eye(5))           # x ~ N(0, I)
        np.testing.assert_allclose(task.w_cov, np.eye(5) / 5)            # β ~ N(0, I/d)
        assert task.w_mean is None or not np.any(task.w_mean)
        assert (model.config.heads, model.config.init_mode) == (2, "torch")
        assert (cfg.method, cfg.lr, cfg.batch_size, cfg.steps) == ("adam", 1e-3, 256, 500_000)


def test_he2025_multitask_default_is_the_text_setting():
    """spec he2025 §2.3: N = 2, d = 6, L = 40, σ² = 0.1, S_1 = {1..4}, S_2 = {3..6} (1-based)."""
    _r, task, model, cfg = cli_run("--task", "multitask_regression", "--model", "multioutput_softmax")
    assert (task.dim, task.context, task.noise) == (6, 40, 0.1)
    assert task.supports == ((0, 1, 2, 3), (2, 3, 4, 5)) and model.config.outputs == 2
    assert (cfg.method, cfg.lr, cfg.batch_size) == ("adam", 1e-3, 256)


@pytest.mark.parametrize(("extra", "heads", "lr", "steps"), [
    ((), 10, 1e-2, 100), (("--context-dist", "orthogonal"), 8, 1e-3, 100_000)])
def test_sander2024_fig3_defaults(extra, heads, lr, steps):
    """spec sander2024 §2.5: Fig. 3 d = 10, T = 20 (code), unitary H = 10, orthogonal H = 8; §3.10:
    A, B, P ~ 0.1·N(0, 1); §4.3: full GD lr 1e-2 for 100 iterations (unitary), 1e-3 for 100 000
    (orthogonal)."""
    _r, task, model, cfg = cli_run("--task", "autoregressive", "--model", "diag", *extra)
    assert (task.dim, task.context) == (10, 20)
    assert task.context_dist == ("orthogonal" if extra else "unitary")
    assert (model.config.heads, model.config.init_scale, model.config.context) == (heads, 0.1, 20)
    assert (cfg.method, cfg.lr, cfg.steps) == ("gd", lr, steps)


def test_sander2024_fig5_and_fig7_defaults():
    """spec §2.5/§4.3: Fig. 5 d = 5, T = 50, Haar O(5), Adam lr 5e-3 [T], 2000 epochs of 2^14 in
    batches of 1024; Fig. 7 E = 10 (dim 5 duplicated), H = 64, Adam lr 1e-2, 200 epochs."""
    _, task, _, cfg = cli_run("--task", "autoregressive", "--model", "aug_layers")
    assert (task.dim, task.context, task.context_dist, task.encoding) == (5, 50, "haar", "augmented")
    assert (cfg.method, cfg.lr, cfg.batch_size, cfg.steps) == ("adam", 5e-3, 1024, 2000 * 2**14 // 1024)
    _, task, model, cfg = cli_run("--task", "autoregressive", "--model", "non_aug")
    assert (task.dim, task.duplicate, model.config.heads) == (5, 2, 64)
    assert (cfg.lr, cfg.steps) == (1e-2, 200 * 2**14 // 1024)


def test_sander2024_fig9_default_is_model_6_on_unitary_contexts():
    """spec §3.7 / App. B: model (6) with P on the unitary setup of §5, d = 1 complex (its real form
    d = 2, H = 2 real heads), T_max = 10; Fig. 3's init 0.1; Adam lr 5e-3 (recipe sander2024-fig9)."""
    r, task, model, cfg = cli_run("--task", "autoregressive", "--model", "eq6")
    assert r.preset.name == "sander2024"
    assert (task.dim, task.context, task.context_dist, task.representation, task.s1) == \
        (2, 10, "unitary", "real", "unit")
    c = model.config
    assert (c.kind, c.heads, c.context, c.init_scale, c.softmax, c.mlp_width) == \
        ("eq6", 2, 10, 0.1, False, 0)
    assert (cfg.method, cfg.lr, cfg.steps, cfg.batch_size) == ("adam", 5e-3, 2000, 128)
    _, _, model, _ = cli_run("--task", "autoregressive", "--model", "eq6", "--softmax", "true",
                             "--mlp-width", "32")
    assert (model.config.softmax, model.config.mlp_width) == (True, 32)


def test_mainali2025_default_is_c0():
    """spec mainali2025 §9.0 C0: d = 4, s = (2, 1, 0.5, 0.25), N = 32, P = 64, η = 0.01, B = 64,
    aligned init p2 = q1 = 0.01·I; 200-300 epochs."""
    r, task, model, cfg = cli_run("--task", "wishart_tasks", "--model", "linear_transformer")
    assert r.preset.name == "mainali2025"
    assert (task.dim, task.context, task.tasks) == (4, 32, 64)
    np.testing.assert_allclose(np.sort(task.eigvals)[::-1] if hasattr(task, "eigvals") else
                               np.sort(np.asarray(task.s))[::-1], [2, 1, 0.5, 0.25])
    assert (model.config.init_mode, model.config.init_scale, model.config.reduced) == \
        ("aligned", 0.01, True)
    assert (cfg.method, cfg.lr, cfg.batch_size) == ("task_sgd", 0.01, 64)
    assert 200 <= cfg.steps / 64 <= 300
    _, _, _, flow = cli_run("--task", "wishart_tasks", "--model", "linear_transformer",
                            "--method", "flow")
    assert flow.t_end == pytest.approx(2 * 0.01 * 64 * 250)        # t = 2ηP · epochs


def test_mainali2025_token_transformer_defaults_are_spec_9_8():
    """spec mainali2025 §9.8, grokking (Nanda et al. 2023): "(a + b) mod p with p = 113 ... vocab
    114. Train on 30% of the 113² = 12,769 pairs"; "1 layer, d_model 128, 4 heads × d_head 32, MLP
    512 with ReLU, no LayerNorm, learned positional embeddings, untied unembedding"; "full-batch
    AdamW, lr 1e-3, wd 1.0, β = (0.9, 0.98), about 40k epochs (short linear warmup)"."""
    r, task, model, cfg = cli_run("--task", "modular_addition", "--model", "transformer")
    assert r.preset.name == "mainali2025" and (task.kind, model.kind) == ("modular_addition", "transformer")
    assert (task.p, task.train_frac, task.vocab, task.n_train) == (113, 0.3, 114, round(0.3 * 12_769))
    c = model.config
    assert (c.vocab, c.vocab_out, c.n_ctx) == (114, 113, 3)
    assert (c.n_layers, c.d_model, c.n_heads, c.d_head, c.d_mlp) == (1, 128, 4, 32, 512)
    assert (c.layer_norm, c.pos_embed) == (False, "learned")
    assert (cfg.method, cfg.lr, cfg.weight_decay, cfg.betas) == ("adam", 1e-3, 1.0, (0.9, 0.98))
    assert cfg.steps == 40_000 and 0 < cfg.warmup <= 100
    assert cfg.batch_size == task.n_train                                    # full batch
    assert cfg.test_size == 12_769 - task.n_train and cfg.n_snapshots == cfg.n_records
    # the split follows --p and --train-frac
    _, task, _, cfg = cli_run("--task", "modular_addition", "--model", "transformer", "--p", "31")
    assert (cfg.batch_size, cfg.test_size) == (round(0.3 * 961), 961 - round(0.3 * 961))
    # attention-only models (§9.8): "LayerNorm, ... no MLPs"; "AdamW β = (0.9, 0.99), wd 0.05"
    r, task, model, cfg = cli_run("--task", "repeated_tokens", "--model", "transformer")
    assert r.preset.name == "mainali2025" and task.kind == "repeated_tokens"
    assert (model.config.d_mlp, model.config.layer_norm, model.config.n_layers) == (0, True, 2)
    assert (model.config.vocab, model.config.n_ctx) == (task.vocab, task.length)
    assert (cfg.method, cfg.weight_decay, cfg.betas) == ("adam", 0.05, (0.9, 0.99))
    assert cfg.test_size > 0 and cfg.n_snapshots == cfg.n_records


def test_musat2025_defaults():
    """spec musat2025 §11: orthonormal inputs, zero init, strict mask, q = N (Theorem 2); App. C/D
    (§11.5): Gaussian data, mean-reduced loss, inclusive mask, λ = 1, zero init."""
    _, task, model, cfg = cli_run("--task", "induction", "--model", "gram19")
    assert (task.data, task.query, task.reduction) == ("orthonormal", "last", "sum")
    assert (model.config.mask, model.config.init_scale, model.config.params) == ("strict", 0.0, "gram19")
    assert cfg.method == "flow" and task.dim == 2 * task.context
    _, task, model, cfg = cli_run("--task", "induction", "--model", "disentangled")
    assert (task.data, task.query, task.reduction, model.config.mask) == \
        ("orthonormal", "last", "sum", "strict")
    assert cfg.method == "flow" and model.config.params == "full"
    _, task, model, cfg = cli_run("--task", "induction", "--model", "disentangled", "--data",
                                  "gaussian")
    assert (task.data, task.query, task.reduction) == ("gaussian", "uniform", "mean")
    assert (model.config.mask, model.config.init_scale, cfg.method, cfg.lr) == \
        ("inclusive", 0.0, "sgd", 1.0)
    _, task, model, cfg = cli_run("--task", "induction", "--model", "three_param", "--data",
                                  "gaussian", "--dim", "32")
    assert (task.reduction, model.config.mask, cfg.method, cfg.lr) == ("mean", "inclusive", "sgd", 1 / 32)
    _, task, model, cfg = cli_run("--task", "induction_tokens", "--model", "standard_transformer")
    assert (task.vocab, task.block, task.pairs) == (32, 32, 8)                  # App. E small
    assert (cfg.method, cfg.lr, cfg.weight_decay, cfg.batch_size) == ("adam", 1e-3, 0.01, 512)


def test_zhang2025_default_is_fig3():
    """Zhang et al. Fig. 3 (docs/zhang2025.md): D = 4, λ ∝ (4, 3, 2, 1) in a random eigenbasis, N =
    31, separate rank 1 with H = 5, App. C.2 init 1e-2, exact gradient flow."""
    r, task, model, cfg = cli_run()
    assert r.preset.name == "zhang2025" and (task.kind, model.kind) == ("linear_regression", "separate")
    assert (task.dim, task.context, task.rotate) == (4, 31, True)
    np.testing.assert_allclose(task.eigvals / task.eigvals.sum(), [0.4, 0.3, 0.2, 0.1])
    assert (model.config.dim, model.config.heads, model.config.rank) == (4, 5, 1)
    assert model.config.init_scale == 1e-2
    assert cfg.method == "flow" and cfg.t_end >= 2e4          # the third drop ends by t ≈ 2e4


def test_given_options_override_the_preset():
    _, task, model, cfg = cli_run("--task", "linear_regression", "--model", "multihead_softmax",
                                  "--dim", "3", "--heads", "4", "--steps", "7")
    np.testing.assert_allclose(task.w_cov, np.eye(3) / 3)      # Σ_w = I/d follows the given d
    assert (model.config.heads, cfg.steps, cfg.lr) == (4, 7, 1e-3)


@pytest.mark.parametrize("given, message", [
    ({"train": {"snapshots": 3}},
     "train.snapshots does not apply to --model merged; the option --n-snapshots sets "
     "train.n_snapshots"),
    ({"model": {"init": 0.1}},
     "model.init does not apply to --model merged; the option --init-scale sets model.init_scale"),
    ({"model": {"n_records": 3}},
     "model.n_records does not apply to --model merged; n_records is a train field: give it as "
     "train.n_records"),
    ({"train": {"speed": 1}}, "train.speed does not apply to --model merged; fastattn train --task "
     "linear_regression --model merged --help lists the fields"),
    ({"model": {"rank": 2}}, "--rank does not apply to --model merged (it applies to --model "
     "separate, softmax_separate)"),
])
def test_a_field_the_pair_lacks_is_named_with_its_family_and_fix(given, message):
    """A Python caller's (a recipe's `preset_run`) field that the pair lacks: one line naming the
    field, the family it was given for (--model: the trainer's fields are a model's run options;
    there is no --train) and the fix."""
    from fastattn.configs import resolve

    with pytest.raises(ValueError) as err:
        resolve("linear_regression", "merged", given)
    assert str(err.value) == message


def test_sander2024_orthogonal_cli_default_reaches_the_prop6_block_solution(tmp_path):
    """Issue 24 acceptance: `--task autoregressive --model diag --context-dist orthogonal` alone (the
    §3.10 init, §4.3 lr 1e-3 and 10⁵ steps, H = 8 < d) reaches Lemma 3 / Prop. 6's rank-d/2 solution:
    C = BᵀA block-diagonal of rank 5, p_{T−1} = −p_T/2, loss ≈ 0 (at the old CLI init 0.01 it ended
    at 2.7e-5 with rank 8)."""
    from fastattn.cli import main
    from fastattn.configs import unflatten
    from fastattn.models.autoregressive import ARDiagConfig

    assert main(["train", "--task", "autoregressive", "--model", "diag", "--context-dist",
                 "orthogonal", "--quiet", "--out", str(tmp_path)]) == 0
    z = np.load(tmp_path / "run.npz")
    b = unflatten(ARDiagConfig(10, 8, context=20), z["params"][-1])
    C, P = b["B"].T @ b["A"], b["P"]
    sv = np.linalg.svd(C, compute_uv=False)
    assert z["loss"][-1] < 1e-10 and int((sv > 1e-3 * sv[0]).sum()) == 5
    block = np.kron(np.eye(5), np.ones((2, 2))).astype(bool)
    assert np.abs(C[~block]).max() < 1e-6 * np.abs(C).max()
    T = np.arange(2, 21)
    np.testing.assert_allclose(P[T - 2, T - 2] / P[T - 2, T - 1], -0.5, atol=1e-4)


def test_docs_table_of_presets_is_the_rendering_of_the_cards(monkeypatch):
    """docs/configs.md's table of presets is generated (`python -m fastattn.configs.table
    docs/configs.md`): the block equals `preset_table()`, and a preset's change reaches the
    rendering (so a stale doc fails here)."""
    import dataclasses
    from pathlib import Path

    from fastattn.configs import MODEL_CARDS
    from fastattn.configs.table import preset_table, rewrite

    doc = (Path(__file__).parents[2] / "docs" / "configs.md").read_text()
    assert rewrite(doc) == doc, "docs/configs.md: run python -m fastattn.configs.table docs/configs.md"
    card = MODEL_CARDS["merged_full"]
    (preset,) = card.presets["linear_regression"]
    moved = dataclasses.replace(preset, model=dict(preset.model, heads=3))
    monkeypatch.setitem(MODEL_CARDS, "merged_full", dataclasses.replace(
        card, presets={"linear_regression": (moved,)}))
    assert "heads=3" in preset_table() and rewrite(doc) != doc
