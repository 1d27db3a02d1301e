"""The token transformer: shapes, the causal mask, the last-position path, and the forward pass
against an explicit per-position loop written from the equations (float64)."""

import numpy as np
import pytest
import torch

from fastattn.models.transformer import Transformer, TransformerConfig


def _reference(model: Transformer, tokens: torch.Tensor) -> torch.Tensor:
    """Logits by loops over positions and heads, row-vector form, pre-norm, ReLU MLP."""
    cfg = model.config
    sd = {k: v.double() for k, v in model.state_dict().items()}
    ln = (lambda x, p: torch.nn.functional.layer_norm(x, (cfg.d_model,), sd[p + ".w"], sd[p + ".b"],
                                                      eps=1e-5)) if cfg.layer_norm else (lambda x, p: x)
    out = torch.zeros(tokens.shape[0], tokens.shape[1], cfg.vocab_out, dtype=torch.float64)
    for b in range(tokens.shape[0]):
        x = torch.stack([sd["embed.W_E"][tok] for tok in tokens[b]])
        if cfg.pos_embed == "learned":
            x = x + sd["pos_embed.W_pos"][: tokens.shape[1]]
        for layer in range(cfg.n_layers):
            p = f"blocks.{layer}."
            h = ln(x, p + "ln1")
            new = x.clone()
            for i in range(x.shape[0]):
                keys = range(i + 1) if cfg.causal else range(x.shape[0])
                for head in range(cfg.n_heads):
                    q = h[i] @ sd[p + "attn.W_Q"][head]
                    s = torch.stack([q @ (h[j] @ sd[p + "attn.W_K"][head]) for j in keys])
                    s = s / np.sqrt(cfg.d_head) if cfg.attn_scale else s
                    a = torch.softmax(s, 0)
                    z = sum(a[n] * (h[j] @ sd[p + "attn.W_V"][head]) for n, j in enumerate(keys))
                    new[i] = new[i] + z @ sd[p + "attn.W_O"][head]
            x = new
            if cfg.d_mlp:
                h = ln(x, p + "ln2")
                x = x + torch.relu(h @ sd[p + "mlp.W_in"] + sd[p + "mlp.b_in"]) @ sd[p + "mlp.W_out"] \
                    + sd[p + "mlp.b_out"]
        out[b] = ln(x, "ln_final") @ sd["unembed.W_U"]
    return out


@pytest.mark.parametrize("fields", [
    dict(n_layers=2, n_heads=2, d_model=6, d_mlp=0),
    dict(n_layers=1, n_heads=3, d_model=6, d_head=4, d_mlp=5, layer_norm=True, vocab_out=4),
    dict(n_layers=2, n_heads=1, d_model=5, causal=False, attn_scale=False, pos_embed="none"),
])
def test_forward_equals_loop_reference(fields):
    model = Transformer(vocab=7, n_ctx=6, init_seed=3, dtype="float64", **fields)
    with torch.no_grad():                                  # nonzero biases and gains are exercised too
        for name, p in model.named_parameters():
            if name.endswith(("b_in", "b_out", ".b", ".w")):
                p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name)),
                                         dtype=p.dtype))
    tokens = torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(0))
    logits = model(tokens)
    assert logits.shape == (3, 5, model.config.vocab_out)
    torch.testing.assert_close(logits, _reference(model, tokens), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(model(tokens, last_only=True), logits[:, -1:], rtol=1e-10, atol=1e-12)


def test_causal_mask_hides_later_tokens():
    model = Transformer(vocab=9, n_ctx=8, n_layers=2, n_heads=2, d_model=8, d_mlp=8, dtype="float64")
    a = torch.randint(0, 9, (2, 8), generator=torch.Generator().manual_seed(1))
    b = a.clone()
    b[:, 5:] = (b[:, 5:] + 1) % 9
    la, lb = model(a), model(b)
    torch.testing.assert_close(la[:, :5], lb[:, :5])
    assert not torch.allclose(la[:, 5:], lb[:, 5:])


def test_config_defaults_and_errors():
    cfg = TransformerConfig(vocab=10, n_ctx=4, d_model=12, n_heads=3)
    assert (cfg.d_head, cfg.vocab_out, cfg.attention_only) == (4, 10, True)
    with pytest.raises(ValueError, match="d_head"):
        TransformerConfig(vocab=10, n_ctx=4, d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="pos_embed"):
        TransformerConfig(vocab=10, n_ctx=4, pos_embed="rotary")
    with pytest.raises(ValueError, match="d_mlp"):
        TransformerConfig(vocab=10, n_ctx=4, d_mlp=-1)
    model = Transformer(cfg)
    with pytest.raises(ValueError, match="n_ctx=4"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError):
        Transformer()


def test_seeded_init_scale():
    a = Transformer(vocab=50, n_ctx=4, d_model=64, n_heads=4, d_mlp=128, init_seed=0)
    b = Transformer(vocab=50, n_ctx=4, d_model=64, n_heads=4, d_mlp=128, init_seed=0)
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    # 1/√fan_in: W_Q entries have variance 1/d, W_O 1/d_head; embedding rows unit norm on average
    assert abs(a.blocks[0].attn.W_Q.var().item() * 64 - 1) < 0.1
    assert abs(a.blocks[0].attn.W_O.var().item() * 16 - 1) < 0.1
    assert abs(a.embed.W_E.norm(dim=1).pow(2).mean().item() - 1) < 0.1


def test_positions_offset_the_positional_embedding():
    model = Transformer(vocab=9, n_ctx=10, n_layers=2, n_heads=2, d_model=8, dtype="float64")
    tokens = torch.randint(0, 9, (2, 4), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(model(tokens, positions=torch.arange(4)), model(tokens))
    shifted = model(tokens, positions=torch.tensor([[3, 4, 5, 6], [6, 7, 8, 9]]))
    with torch.no_grad():                  # the same as moving W_pos's rows 3..6 to 0..3
        ref = Transformer(vocab=9, n_ctx=10, n_layers=2, n_heads=2, d_model=8, dtype="float64")
        ref.load_state_dict(model.state_dict())
        ref.pos_embed.W_pos[:4] = model.pos_embed.W_pos[3:7]
    torch.testing.assert_close(shifted[0], ref(tokens)[0])
    with pytest.raises(ValueError, match="positions"):
        model(tokens, positions=torch.tensor([7, 8, 9, 10]))
