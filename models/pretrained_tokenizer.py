"""The ``tokenizer`` setting: a pretrained byte-level BPE tokenizer, read from files or from the Hugging Face hub.

It names one of:

- a tokenizers JSON file: ``tokenizer.json`` as the Hugging Face ``tokenizers`` library writes it (GPT-2's on the
  hub), or the ``tokenizer.json`` of an earlier tensorlab run;
- a folder holding GPT-2's pair of files, ``vocab.json`` (token -> id) and ``merges.txt`` (one merge per line,
  after an optional ``#version`` line); a ``<|endoftext|>`` in the vocabulary becomes one special token, as in
  GPT-2;
- a hub name such as ``gpt2``: downloaded once with ``tokenizers.Tokenizer.from_pretrained`` and cached as
  ``$TENSORLAB_CACHE/tokenizers/<name>.json`` (a ``/`` in the name becomes ``--``), its size and sha256 recorded
  beside it and checked at every later use (models/download_cache.py), so later runs need no network.

An existing file or folder is read from disk; a name ending in ``.json`` or starting with ``/``, ``.`` or ``~``
that does not exist is an error; anything else is a hub name. Whichever it is, it must be byte-level BPE
(``BPETokenizer.pretrained`` says why), and the model's ``vocab_size`` must equal its number of tokens: a
mismatch is refused, not adjusted, so the config says the model it trains.
"""

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from models.download_cache import cache_dir, is_cached, write_recorded
from models.tokenizer import END_OF_TEXT, FILE_FORMAT, BPETokenizer

PATH_STARTS = ("/", ".", "~")
GIVE_A_FILE = "give a local tokenizer.json, or a folder holding vocab.json and merges.txt, with --tokenizer PATH"


def load_pretrained(spec: str, vocab_size: int) -> BPETokenizer:
    """The tokenizer that ``spec`` names; ValueError in one line when it cannot be had or has another vocab_size."""
    tokenizer = _tokenizer(spec)
    if tokenizer.vocab_size != vocab_size:
        raise ValueError(
            f"tokenizer {spec} has {tokenizer.vocab_size} tokens, but vocab_size (--vocab-size) is {vocab_size}; "
            f"set vocab_size to {tokenizer.vocab_size} (a pretrained tokenizer's vocabulary is the model's)"
        )
    return tokenizer


def fetch_from_hub(name: str) -> str:
    """The tokenizers JSON of hub repository ``name``, through the network (tests replace this to stay offline)."""
    return Tokenizer.from_pretrained(name).to_str()


def hub_cache_path(name: str) -> Path:
    """Where the tokenizer of hub repository ``name`` is cached."""
    return cache_dir() / "tokenizers" / (name.replace("/", "--") + ".json")


def _tokenizer(spec: str) -> BPETokenizer:
    path = Path(spec).expanduser()
    if path.is_dir():
        return _from_vocab_and_merges(path)
    if path.is_file():
        return _from_json_file(path)
    if spec.endswith(".json") or spec.startswith(PATH_STARTS):
        raise ValueError(
            f"tokenizer {spec} does not exist; expected a tokenizer.json, or a folder with vocab.json "
            f"and merges.txt, or a Hugging Face hub name such as gpt2"
        )
    return _from_hub(spec)


def _from_json_file(path: Path) -> BPETokenizer:
    """A tokenizers JSON file, or one written by BPETokenizer.save (its tokenizer inside)."""
    try:
        blob = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(blob, dict) and blob.get("format") == FILE_FORMAT:
            blob = blob["tokenizer"]
        tok = Tokenizer.from_str(json.dumps(blob))
    except Exception as err:  # JSON, UTF-8 and the tokenizers library's plain Exceptions
        raise ValueError(
            f"tokenizer {path} is not a tokenizers JSON file ({str(err).splitlines()[0][:120]}); {GIVE_A_FILE}"
        ) from None
    return BPETokenizer.pretrained(tok, str(path))


def _from_vocab_and_merges(folder: Path) -> BPETokenizer:
    """GPT-2's two files in ``folder``: a byte-level BPE with GPT-2's pre-tokenizer and decoder."""
    vocab, merges = folder / "vocab.json", folder / "merges.txt"
    missing = [p.name for p in (vocab, merges) if not p.is_file()]
    if missing:
        raise ValueError(f"tokenizer folder {folder} has no {' and no '.join(missing)}; expected both, GPT-2's format")
    try:
        tok = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    except Exception as err:  # the tokenizers library raises plain Exceptions on malformed files
        raise ValueError(
            f"tokenizer folder {folder}: vocab.json and merges.txt are not GPT-2's format "
            f"({str(err).splitlines()[0][:120]})"
        ) from None
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if END_OF_TEXT in tok.get_vocab():
        tok.add_special_tokens([END_OF_TEXT])  # keeps its id; now matched whole in the text, as GPT-2 does
    return BPETokenizer.pretrained(tok, str(folder))


def _from_hub(name: str) -> BPETokenizer:
    """Hub repository ``name``'s tokenizer: the cached copy, else downloaded once and cached."""
    cached = hub_cache_path(name)
    if not is_cached(cached):
        try:
            text = fetch_from_hub(name)
        except Exception as err:  # no network, no such repository: huggingface_hub's errors, or plain Exceptions
            raise ValueError(
                f"tokenizer {name!r} is not a local file or folder, and downloading it from the Hugging Face hub "
                f"failed ({type(err).__name__}: {str(err).splitlines()[0][:300]}); {GIVE_A_FILE}"
            ) from None
        write_recorded(cached, text.encode("utf-8"), f"Tokenizer.from_pretrained({name!r})")
    return BPETokenizer.pretrained(Tokenizer.from_str(cached.read_text(encoding="utf-8")), f"{name} ({cached})")
