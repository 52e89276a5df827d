"""mini_llm against transformers' Qwen3ForCausalLM, and the paged cache against a full prefill."""

import json
import os

import pytest
import torch

import reference  # noqa: F401

from kv_cache import AttentionMetadata
from mini_llm import CheckpointError, Transformer
from tiny_models import build_model, checkpoint_dir

transformers = pytest.importorskip("transformers")

CONFIGS = {
    "tied": dict(tie_word_embeddings=True),
    "untied": dict(tie_word_embeddings=False),
    "gqa-4-to-1": dict(num_attention_heads=8, num_key_value_heads=2, head_dim=8),
    "heads-times-dim-not-hidden": dict(num_attention_heads=4, num_key_value_heads=2, head_dim=24),
}


def _checkpoint(name, tmp_path_factory):
    # tie_word_embeddings is a config field, not a shape field: pass it through tiny_config.
    return checkpoint_dir(seed=3, cache=str(tmp_path_factory.getbasetemp() / "models"), **CONFIGS[name])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_match_transformers(name, tmp_path_factory):
    path = _checkpoint(name, tmp_path_factory)
    ours = Transformer.from_pretrained(path)
    theirs = transformers.Qwen3ForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    ids = torch.randint(0, ours.config.vocab_size, (37,), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = theirs(ids[None], attention_mask=torch.ones(1, len(ids), dtype=torch.long)).logits[0]
    got = ours.logits(ids)
    assert got.shape == expected.shape
    diff = (got - expected).abs().max().item()
    assert diff <= 1e-5, f"{name}: max |logit difference| {diff:.2e}"


def test_untied_checkpoint_has_its_own_output_layer(tmp_path_factory):
    model = Transformer.from_pretrained(_checkpoint("untied", tmp_path_factory))
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    tied = Transformer.from_pretrained(_checkpoint("tied", tmp_path_factory))
    assert tied.lm_head.weight.data_ptr() == tied.model.embed_tokens.weight.data_ptr()


def test_paged_decode_step_equals_full_prefill():
    model = build_model(seed=5)
    ids = torch.randint(0, 512, (41,), generator=torch.Generator().manual_seed(1)).tolist()
    kv = model.new_kv_cache(num_blocks=8, block_size=16)
    table = [5, 2, 7]  # deliberately not in order: the block table, not the block ids, gives order
    with torch.inference_mode():
        # prefill all but the last token, then decode the last one through the cache
        meta = AttentionMetadata.build([40], [40], [table], 16)
        model(torch.tensor(ids[:40]), torch.arange(40), kv, meta)
        meta = AttentionMetadata.build([1], [41], [table], 16)
        step = model.compute_logits(model(torch.tensor(ids[40:]), torch.tensor([40]), kv, meta))[0]
    full = model.logits(ids)[-1]
    assert torch.allclose(step, full, atol=1e-5), (step - full).abs().max()


def test_batch_of_different_lengths_matches_each_sequence_alone():
    model = build_model(seed=6)
    gen = torch.Generator().manual_seed(2)
    seqs = [torch.randint(0, 512, (n,), generator=gen).tolist() for n in (3, 16, 29)]
    kv = model.new_kv_cache(num_blocks=8, block_size=16)
    tables = [[0], [1], [2, 3]]
    meta = AttentionMetadata.build([len(s) for s in seqs], [len(s) for s in seqs], tables, 16)
    positions = torch.cat([torch.arange(len(s)) for s in seqs])
    with torch.inference_mode():
        hidden = model(torch.tensor(sum(seqs, [])), positions, kv, meta)
        logits = model.compute_logits(hidden)
    start = 0
    for s in seqs:
        alone = model.logits(s)
        assert torch.allclose(logits[start:start + len(s)], alone, atol=1e-5)
        start += len(s)


def test_rope_theta_read_from_rope_parameters(tmp_path):
    path = checkpoint_dir(seed=1, cache=str(tmp_path))
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    theta = cfg.pop("rope_theta")
    cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    cfg["dtype"] = cfg.pop("torch_dtype")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f)
    assert Transformer.from_pretrained(path).config.rope_theta == theta


def test_clear_errors_for_broken_checkpoints(tmp_path):
    with pytest.raises(CheckpointError, match="config.json: no such file"):
        Transformer.from_pretrained(tmp_path)
    path = checkpoint_dir(seed=1, cache=str(tmp_path / "m"))
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)

    bad = tmp_path / "llama"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({**cfg, "model_type": "llama"}))
    with pytest.raises(CheckpointError, match="only 'qwen3'"):
        Transformer.from_pretrained(bad)

    from safetensors.torch import load_file, save_file
    state = load_file(os.path.join(path, "model.safetensors"))
    missing = tmp_path / "missing"
    missing.mkdir()
    (missing / "config.json").write_text(json.dumps(cfg))
    save_file({k: v for k, v in state.items() if "q_norm" not in k}, str(missing / "model.safetensors"))
    with pytest.raises(CheckpointError, match="missing tensor.*q_norm"):
        Transformer.from_pretrained(missing)

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "config.json").write_text(json.dumps(cfg))
    save_file({**state, "model.layers.0.self_attn.q_proj.bias": torch.zeros(64)}, str(extra / "model.safetensors"))
    with pytest.raises(CheckpointError, match="unexpected tensor.*q_proj.bias"):
        Transformer.from_pretrained(extra)


def test_sharded_checkpoint_loads(tmp_path):
    from safetensors.torch import load_file, save_file
    path = checkpoint_dir(seed=2, cache=str(tmp_path / "m"))
    state = load_file(os.path.join(path, "model.safetensors"))
    names = sorted(state)
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text(open(os.path.join(path, "config.json")).read())
    half = len(names) // 2
    save_file({n: state[n] for n in names[:half]}, str(sharded / "model-00001-of-00002.safetensors"))
    save_file({n: state[n] for n in names[half:]}, str(sharded / "model-00002-of-00002.safetensors"))
    a, b = Transformer.from_pretrained(path), Transformer.from_pretrained(sharded)
    assert torch.equal(a.logits([1, 2, 3]), b.logits([1, 2, 3]))


def test_same_seed_gives_identical_files(tmp_path):
    a = checkpoint_dir(seed=9, cache=str(tmp_path / "a"))
    b = checkpoint_dir(seed=9, cache=str(tmp_path / "b"))
    for name in ("config.json", "model.safetensors"):
        assert open(os.path.join(a, name), "rb").read() == open(os.path.join(b, name), "rb").read()


def test_tiny_model_does_not_collapse_into_one_token():
    model = build_model(seed=0)
    seq = [1, 2, 3]
    for _ in range(30):
        seq.append(int(model.logits(seq)[-1].argmax()))
    assert len(set(seq[3:])) >= 10, seq
