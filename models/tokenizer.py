"""A byte-pair-encoding tokenizer: a small wrapper around HuggingFace ``tokenizers``.

Two ways to cut text into words before BPE merges characters inside them:

- ``"bytelevel"`` (default, GPT-2 style): text is turned into bytes, each byte
  shown as one printable character (a space is ``Ġ``, a newline ``Ċ``). All 256
  bytes are in the vocabulary, so any text round-trips exactly:
  ``decode(encode(text)) == text``, newlines and runs of spaces included.
- ``"whitespace"`` (as older reports used): words and punctuation runs, with the
  whitespace thrown away. Lossy: ``decode`` puts one space between every two
  tokens, even pieces of one word, so ``"Citizen:\\n"`` may come back as
  ``"C it i z en :"``. Characters unseen in training become ``[UNK]``.

A tokenizer made elsewhere (GPT-2's) is wrapped with ``BPETokenizer.pretrained`` when it is byte-level BPE, as
those trained here are; models/pretrained_tokenizer.py finds one from the ``tokenizer`` setting.
"""

import hashlib
import json
import re
from pathlib import Path

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from tensorlab.serialization import write_atomically

PRETOKENIZERS = ("bytelevel", "whitespace")
MIN_BYTELEVEL_VOCAB = 260  # the 256 single bytes plus a few merges
UNK = "[UNK]"  # whitespace mode only; bytelevel never needs it
END_OF_TEXT = "<|endoftext|>"  # between the documents of a corpus directory: one token, never merged
FILE_FORMAT = "tensorlab-bpe"
# Longer pre-tokens (a run of letters with no space, a base64 blob) are cut into pieces of this many characters.
# BPE training counts pairs inside each pre-token, merge after merge: on one 2 MB word that is quadratic and
# stalls for minutes; in pieces it is linear in the corpus. Words of natural text are far shorter, so their
# merges and encodings do not change.
MAX_PRETOKEN = 128
# Text this long trains long enough (seconds) that the trainer shows its progress bar on stderr.
SHOW_PROGRESS_CHARS = 4_000_000

# Cutting text here never changes the encoding: a newline that follows a
# non-space character always starts a new pre-token in both modes, so the pieces
# can be encoded in parallel with encode_batch and concatenated (unlike plain
# lines: the GPT-2 pattern can keep "\n " together across a line end).
_SAFE_CUT = re.compile(r"(?<=\S)(?=\n)")

# How token labels show characters that are invisible in a plot axis.
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def _capped(pre_tokenizer):
    """`pre_tokenizer`, then every pre-token longer than MAX_PRETOKEN characters cut into pieces of at most that."""
    return pre_tokenizers.Sequence(
        [pre_tokenizer, pre_tokenizers.Split(Regex(f".{{1,{MAX_PRETOKEN}}}"), behavior="isolated")]
    )


def byte_level_chars() -> dict[str, int]:
    """GPT-2's map from each byte-level character back to the byte it stands for."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    char_to_byte, shifted = {}, 0
    for b in range(256):
        if b in printable:
            char_to_byte[chr(b)] = b
        else:  # control bytes and space move up past 255 to printable characters
            char_to_byte[chr(256 + shifted)] = b
            shifted += 1
    return char_to_byte


class BPETokenizer:
    """Byte-pair encoding of text to int64 token ids and back; make one with ``train`` or ``load``."""

    def __init__(self, tokenizer: Tokenizer, pretokenizer: str):
        _check_pretokenizer(pretokenizer)
        self._tok = tokenizer
        self.pretokenizer = pretokenizer
        self._cut_at_newlines = _cuts_safely(json.loads(tokenizer.to_str()).get("pre_tokenizer"))
        self._labels, self._raw = self._describe_vocab()
        self._n_bytes = np.array([len(raw) for raw in self._raw], dtype=np.int64)  # (V,) bytes each token decodes to

    @classmethod
    def train(cls, text: str, vocab_size: int = 500, pretokenizer: str = "bytelevel") -> "BPETokenizer":
        """Learn BPE merges on ``text`` until the vocabulary has ``vocab_size`` tokens.

        If the text holds END_OF_TEXT (documents of a directory), it becomes one special token.
        """
        _check_pretokenizer(pretokenizer)
        if not isinstance(text, str) or not text:
            got = "an empty str" if isinstance(text, str) else type(text).__name__
            raise ValueError(f"text must be a non-empty str, got {got}.")
        low = MIN_BYTELEVEL_VOCAB if pretokenizer == "bytelevel" else 2
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < low:
            raise ValueError(
                f"vocab_size must be an int >= {low} for pretokenizer={pretokenizer!r}, got {vocab_size!r}."
            )

        specials = [END_OF_TEXT] if END_OF_TEXT in text else []
        if pretokenizer == "bytelevel":
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = _capped(pre_tokenizers.ByteLevel(add_prefix_space=False))
            tok.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(
                vocab_size=vocab_size,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                special_tokens=specials,
                show_progress=len(text) > SHOW_PROGRESS_CHARS,
            )
        else:
            tok = Tokenizer(models.BPE(unk_token=UNK))
            tok.pre_tokenizer = _capped(pre_tokenizers.Whitespace())
            trainer = trainers.BpeTrainer(
                vocab_size=vocab_size, special_tokens=[UNK, *specials], show_progress=len(text) > SHOW_PROGRESS_CHARS
            )
        tok.train_from_iterator(_SAFE_CUT.split(text), trainer=trainer)  # same merges as one string, faster

        if tok.get_vocab_size() > vocab_size:  # the trainer keeps every character even past vocab_size
            raise ValueError(
                f"vocab_size={vocab_size} is too small: the text has {tok.get_vocab_size()} "
                f"single-character tokens (with {UNK}); ask for at least that many."
            )
        return cls(tok, pretokenizer)

    @classmethod
    def pretrained(cls, tokenizer: Tokenizer, source: str) -> "BPETokenizer":
        """Wrap a byte-level BPE ``tokenizer`` made elsewhere (GPT-2's); ValueError naming ``source`` if it is not one.

        Byte counts (bits per byte), token labels and lossless decoding need every token to stand for bytes,
        every byte to have a token, and the text to reach the BPE unchanged.
        """
        problem = _not_byte_level_bpe(json.loads(tokenizer.to_str()))
        if problem:
            raise ValueError(
                f"tokenizer {source}: {problem}; tensorlab takes byte-level BPE tokenizers (GPT-2's kind), "
                f"or trains one when no tokenizer is given"
            )
        return cls(tokenizer, "bytelevel")

    @property
    def vocab_size(self) -> int:
        """The number of token ids, special tokens included (at most the size asked for)."""
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> np.ndarray:
        """Token ids of ``text`` as a 1-D int64 array."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}.")
        if not text:
            return np.zeros(0, dtype=np.int64)
        pieces = _SAFE_CUT.split(text) if self._cut_at_newlines else [text]
        pieces = self._tok.encode_batch(pieces, add_special_tokens=False)
        return np.concatenate([np.asarray(p.ids, dtype=np.int64) for p in pieces])

    def decode(self, ids) -> str:
        """The text that token ``ids`` stand for (whitespace mode: tokens joined by spaces).

        Byte-level ids may end inside a character (a sample cut after any token): those last bytes are held
        back, not shown as "\ufffd", until the ids that complete them come. A "\ufffd" anywhere else marks
        bytes that form no character (a model can emit byte tokens in an order UTF-8 does not allow).
        """
        ids = self._checked_ids(ids)
        text = self._tok.decode(ids.tolist(), skip_special_tokens=False)
        if self.pretokenizer == "bytelevel" and text.endswith("\ufffd"):
            tail = b"".join(self._raw[i] for i in ids[-4:].tolist())  # four tokens hold at least four bytes
            if _ends_inside_a_character(tail):
                text = text[:-1]  # the one "\ufffd" UTF-8 decoding puts for an unfinished character
        return text

    def token_strings(self, ids) -> list[str]:
        """A readable label per id, e.g. for heatmap axes: space shows as '␣', newline as '↵'."""
        return [self._labels[i] for i in self._checked_ids(ids).tolist()]

    def token_bytes(self, ids) -> int:
        """Total UTF-8 bytes that ``ids`` decode to; exact and additive in bytelevel mode.

        Whitespace mode counts the bytes of each token's text only (the dropped
        whitespace is not counted and [UNK] counts 0), so bits per byte from the
        two modes are not comparable.
        """
        return int(self._n_bytes[self._checked_ids(ids)].sum())

    def fingerprint(self) -> str:
        """sha256 of what the tokenizer does (its vocabulary, merges and pretokenizer), not of a file's layout.

        Every checkpoint records it: ids mean text only under the tokenizer they were trained with.
        """
        blob = {"pretokenizer": self.pretokenizer, "tokenizer": json.loads(self._tok.to_str())}
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode("utf-8")).hexdigest()

    def save(self, path) -> None:
        """Write the tokenizer to one JSON file (tokenizer.json content plus the pretokenizer name)."""
        blob = {"format": FILE_FORMAT, "pretokenizer": self.pretokenizer, "tokenizer": json.loads(self._tok.to_str())}
        write_atomically(Path(path), json.dumps(blob, ensure_ascii=False).encode("utf-8"))

    @classmethod
    def load(cls, path) -> "BPETokenizer":
        """Read a tokenizer written by ``save``."""
        path = Path(path)
        expected = f"expected JSON written by BPETokenizer.save, with format={FILE_FORMAT!r}"
        try:
            blob = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
            raise ValueError(f"{path} is not a saved tokenizer ({err}); {expected}.") from None
        if not isinstance(blob, dict) or blob.get("format") != FILE_FORMAT or "tokenizer" not in blob:
            raise ValueError(f"{path} is not a saved tokenizer; {expected} and a 'tokenizer' key.")
        try:
            tok = Tokenizer.from_str(json.dumps(blob["tokenizer"]))
        except Exception as err:  # the tokenizers library raises plain Exceptions for a model of the wrong shape
            raise ValueError(
                f"{path} is not a usable tokenizer ({str(err).splitlines()[0][:120]}); {expected}."
            ) from None
        pretokenizer = blob.get("pretokenizer")
        return cls(tok, pretokenizer)

    def __repr__(self) -> str:
        return f"BPETokenizer(pretokenizer={self.pretokenizer!r}, vocab_size={self.vocab_size})"

    def _checked_ids(self, ids) -> np.ndarray:
        """``ids`` as a 1-D int64 array, or an error saying which id is out of range."""
        ids = np.asarray(ids)
        if ids.size == 0:
            return np.zeros(0, dtype=np.int64)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"expected a 1-D sequence of integer token ids, got shape {ids.shape} dtype {ids.dtype}.")
        bad = (ids < 0) | (ids >= self.vocab_size)
        if bad.any():
            raise ValueError(f"token id {int(ids[bad][0])} is out of range; ids must be in [0, {self.vocab_size}).")
        return ids.astype(np.int64, copy=False)

    def _describe_vocab(self) -> tuple[list[str], list[bytes]]:
        """For every id: a readable label and the bytes it decodes to."""
        id_to_token = {i: t for t, i in self._tok.get_vocab(with_added_tokens=True).items()}
        added = self._tok.get_added_tokens_decoder()  # END_OF_TEXT, [UNK]: decoded as their own text
        char_to_byte = byte_level_chars()
        labels, raws = [], []
        for i in range(self.vocab_size):
            token = id_to_token[i]
            if token == UNK and self.pretokenizer == "whitespace":
                raw, text = b"", token
            elif i in added:
                raw, text = token.encode("utf-8"), token
            elif self.pretokenizer == "bytelevel":
                raw = bytes(char_to_byte[c] for c in token)  # one character per byte
                text = raw.decode("utf-8", errors="backslashreplace")  # half a character shows as \xe2
            else:
                raw, text = token.encode("utf-8"), token
            labels.append("".join(_VISIBLE.get(c, c if c.isprintable() else ascii(c)[1:-1]) for c in text))
            raws.append(raw)
        return labels, raws


def _ends_inside_a_character(data: bytes) -> bool:
    """True when `data` ends with the first bytes of a UTF-8 character whose last bytes are still to come."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for the character's first byte
            continue
        if byte < 0xC0:  # ASCII: every character before it is complete
            return False
        needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4  # 110xxxxx, 1110xxxx, 11110xxx
        return back < needed
    return False


def _pre_tokenizer_steps(pre_tokenizer) -> list[dict]:
    """The steps of a tokenizers JSON pre-tokenizer (a Sequence's, or the one), [] for none."""
    if not pre_tokenizer:
        return []
    return pre_tokenizer["pretokenizers"] if pre_tokenizer.get("type") == "Sequence" else [pre_tokenizer]


def _cuts_safely(pre_tokenizer) -> bool:
    """Whether cutting text before a newline that follows a non-space (_SAFE_CUT) leaves its encoding unchanged.

    True of GPT-2's byte-level pattern and of Whitespace, which start a new pre-token there, and of the length
    cap; other patterns may join a newline to what precedes it (".\n"), and a prefix space would be added to
    every piece: those tokenizers encode the text in one piece.
    """
    capped = {"type": "Split", "pattern": {"Regex": f".{{1,{MAX_PRETOKEN}}}"}}
    steps = _pre_tokenizer_steps(pre_tokenizer)
    return bool(steps) and all(
        (step["type"] == "ByteLevel" and step.get("use_regex", True) and not step.get("add_prefix_space"))
        or step["type"] == "Whitespace"
        or {k: step.get(k) for k in capped} == capped
        for step in steps
    )


def _not_byte_level_bpe(blob: dict) -> str | None:
    """What keeps the tokenizers JSON ``blob`` from being byte-level BPE, or None when it is one."""
    model = blob.get("model") or {}
    if model.get("type") != "BPE":
        return f"its model is {model.get('type')!r}, not BPE"
    if blob.get("normalizer"):
        return f"it normalizes the text ({blob['normalizer'].get('type')}), so decoding would not give it back"
    steps = _pre_tokenizer_steps(blob.get("pre_tokenizer"))
    if not any(step.get("type") == "ByteLevel" for step in steps):
        return "its pre-tokenizer is not byte-level"
    if any(step.get("add_prefix_space") for step in steps):
        return "its pre-tokenizer adds a space before the text (add_prefix_space), so decoding would not give it back"
    if (blob.get("decoder") or {}).get("type") != "ByteLevel":
        return "its decoder is not byte-level"
    vocab, added = model.get("vocab") or {}, {t["content"]: t["id"] for t in blob.get("added_tokens", [])}
    ids = sorted({**vocab, **added}.values())
    if ids != list(range(len(ids))):
        return f"its {len(ids)} token ids are not 0..{len(ids) - 1}, each once"
    char_to_byte = byte_level_chars()
    odd = next((t for t in vocab if t not in added and any(c not in char_to_byte for c in t)), None)
    if odd is not None:
        return f"its token {odd!r} is not made of byte-level characters"
    missing = [b for c, b in char_to_byte.items() if c not in vocab]
    if missing:
        return f"it has no token for {len(missing)} of the 256 bytes (byte {missing[0]} first): some text cannot encode"
    return None


def _check_pretokenizer(name) -> None:
    """Raise ValueError unless ``name`` is one of PRETOKENIZERS."""
    if name not in PRETOKENIZERS:
        raise ValueError(f"unknown pretokenizer {name!r}; expected one of {PRETOKENIZERS}.")
