"""The `tokenizer` setting (models/pretrained_tokenizer.py): GPT-2's vocab.json + merges.txt, a tokenizers JSON
file, a Hugging Face hub name (downloads replaced, or made to fail), and a short run trained with one. Offline:
every tokenizer here is a tiny GPT-2-format vocabulary that the test writes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import train
from models import pretrained_tokenizer
from models.checkpoint import read_checkpoint
from models.download_cache import CacheError, record_path
from models.pretrained_tokenizer import hub_cache_path, load_pretrained
from models.tokenizer import END_OF_TEXT, BPETokenizer, byte_level_chars
from models.train_config import TrainConfig

ROOT = Path(__file__).resolve().parent.parent
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("o", "n"), ("Ġ", "a"), ("Ã", "©")]  # "Ã©" is é's two bytes
TEXT = "the cat sat on the mat.\nCafé 中文 — the end\n\n  spaces\tand tabs"


def gpt2_vocab():
    """GPT-2's layout: the 256 byte-level characters, then one token per merge, then <|endoftext|> last."""
    vocab = {c: i for i, c in enumerate(byte_level_chars())}
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    vocab[END_OF_TEXT] = len(vocab)
    return vocab


def write_gpt2_files(folder):
    """A tiny GPT-2-format pair in `folder`: vocab.json and merges.txt (with GPT-2's #version line)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(gpt2_vocab(), ensure_ascii=False), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES), encoding="utf-8")
    return folder


def hub_layout_json(vocab=None):
    """The same tokenizer as tokenizer.json on the hub lays GPT-2's out (written by hand, not by the library)."""
    vocab = vocab or gpt2_vocab()
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": vocab[END_OF_TEXT],
                "content": END_OF_TEXT,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": True,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {**byte_level, "trim_offsets": False},
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "vocab": vocab,
            "merges": [f"{a} {b}" for a, b in MERGES],
        },
    }


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    """An empty cache in tmp_path, and a hub download that fails the test if called."""
    monkeypatch.setenv("TENSORLAB_CACHE", str(tmp_path / "cache"))

    def no_network(name):
        raise AssertionError(f"the test tried to download {name}")

    monkeypatch.setattr(pretrained_tokenizer, "fetch_from_hub", no_network)
    return tmp_path / "cache"


V = len(gpt2_vocab())  # 256 bytes + 6 merges + <|endoftext|> = 263


def test_vocab_and_merges_encode_by_the_merges_and_decode_losslessly(tmp_path):
    tok = load_pretrained(str(write_gpt2_files(tmp_path / "gpt2")), V)
    vocab = gpt2_vocab()
    assert tok.vocab_size == V
    # " the" -> Ġ t h e -> Ġt, he -> Ġthe; "the" at the start has no Ġ: t + he; " on" -> Ġ + on
    assert tok.encode("the the on").tolist() == [vocab["t"], vocab["he"], vocab["Ġthe"], vocab["Ġ"], vocab["on"]]
    assert tok.encode("é").tolist() == [vocab["Ã©"]]
    assert tok.encode(f"a{END_OF_TEXT}b").tolist() == [vocab["a"], vocab[END_OF_TEXT], vocab["b"]]  # one token
    ids = tok.encode(TEXT)
    assert ids.tolist() == tok._tok.encode(TEXT, add_special_tokens=False).ids  # cut at newlines, as one piece
    assert tok.decode(ids) == TEXT
    assert tok.token_bytes(ids) == len(TEXT.encode("utf-8"))


def test_decoding_a_cut_inside_a_character_shows_no_replacement_character(tmp_path):
    tok = load_pretrained(str(write_gpt2_files(tmp_path / "gpt2")), V)
    ids = tok.encode(TEXT)
    held_back = 0
    for k in range(len(ids) + 1):
        text = tok.decode(ids[:k])
        assert "\ufffd" not in text and TEXT.startswith(text)
        held_back += len(text.encode("utf-8")) < tok.token_bytes(ids[:k])  # the cut is inside a character
    # 中, 文 and — are three single-byte tokens each (two cuts inside each); é is one merged token
    assert held_back == sum(len(c.encode("utf-8")) - 1 for c in TEXT if c in "中文—") == 6


def test_a_tokenizers_json_file_gives_the_same_tokens_as_the_pair(tmp_path):
    pair = load_pretrained(str(write_gpt2_files(tmp_path / "gpt2")), V)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(hub_layout_json(), ensure_ascii=False), encoding="utf-8")
    from_json = load_pretrained(str(path), V)
    assert from_json.encode(TEXT).tolist() == pair.encode(TEXT).tolist()
    assert from_json.encode(END_OF_TEXT).tolist() == [V - 1]
    assert from_json.decode(from_json.encode(TEXT)) == TEXT


def test_a_pattern_that_joins_a_newline_to_punctuation_encodes_the_text_in_one_piece(tmp_path):
    """Newer tokenizers (Llama 3's kind) keep ".\n" in one pre-token: cutting the text before the newline, as
    encode does for GPT-2's pattern, would lose their merge of the two."""
    vocab = {c: i for i, c in enumerate(byte_level_chars())}
    vocab[".Ċ"] = len(vocab)
    vocab[END_OF_TEXT] = len(vocab)
    blob = hub_layout_json(vocab)
    blob["model"]["merges"] = [". Ċ"]
    split = {
        "type": "Split",
        "pattern": {"Regex": r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s+|\p{L}+"},
        "behavior": "Isolated",
        "invert": False,
    }
    blob["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            split,
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    (tmp_path / "joins.json").write_text(json.dumps(blob, ensure_ascii=False), encoding="utf-8")
    tok = load_pretrained(str(tmp_path / "joins.json"), len(vocab))
    ids = tok.encode("Hi.\nYo.\n")
    assert ids.tolist() == [vocab["H"], vocab["i"], vocab[".Ċ"], vocab["Y"], vocab["o"], vocab[".Ċ"]]
    assert tok.decode(ids) == "Hi.\nYo.\n"


def test_a_runs_tokenizer_json_is_a_pretrained_tokenizer_too(tmp_path, corpus_file):
    trained = BPETokenizer.train(corpus_file.read_text()[:20_000], 300)
    trained.save(tmp_path / "tokenizer.json")
    again = load_pretrained(str(tmp_path / "tokenizer.json"), 300)
    assert again.fingerprint() == trained.fingerprint()
    assert again.encode(TEXT).tolist() == trained.encode(TEXT).tolist()


def test_a_vocab_size_other_than_the_tokenizers_is_refused_in_one_line(tmp_path):
    folder = write_gpt2_files(tmp_path / "gpt2")
    with pytest.raises(ValueError) as err:
        load_pretrained(str(folder), 500)
    message = str(err.value)
    assert "\n" not in message and f"has {V} tokens" in message and "vocab_size (--vocab-size) is 500" in message


def test_tokenizers_that_are_not_byte_level_bpe_are_refused(tmp_path, corpus_file):
    whitespace = BPETokenizer.train(corpus_file.read_text()[:20_000], 300, "whitespace")
    whitespace.save(tmp_path / "whitespace.json")
    with pytest.raises(ValueError, match="pre-tokenizer is not byte-level"):
        load_pretrained(str(tmp_path / "whitespace.json"), 300)
    no_byte = gpt2_vocab()
    del no_byte["Ā"]  # byte 0
    no_byte = {t: i for i, t in enumerate(no_byte)}  # ids without a gap
    (tmp_path / "nobyte.json").write_text(json.dumps(hub_layout_json(no_byte)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"no token for 1 of the 256 bytes \(byte 0 first\)"):
        load_pretrained(str(tmp_path / "nobyte.json"), V - 1)
    prefix = hub_layout_json()
    prefix["pre_tokenizer"]["add_prefix_space"] = True
    (tmp_path / "prefix.json").write_text(json.dumps(prefix), encoding="utf-8")
    with pytest.raises(ValueError, match="adds a space before the text"):
        load_pretrained(str(tmp_path / "prefix.json"), V)


def test_missing_files_are_one_line_naming_them(tmp_path, offline_hub):
    with pytest.raises(ValueError, match=r"tokenizer .*missing\.json does not exist"):
        load_pretrained(str(tmp_path / "missing.json"), V)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "vocab.json").write_text("{}")
    with pytest.raises(ValueError, match="has no merges.txt"):
        load_pretrained(str(tmp_path / "half"), V)


def test_a_hub_name_offline_is_one_line_saying_to_give_a_local_file(offline_hub, monkeypatch):
    def unreachable(name):
        raise OSError("An error happened while trying to locate the file on the Hub.\nPlease check your connection")

    monkeypatch.setattr(pretrained_tokenizer, "fetch_from_hub", unreachable)
    with pytest.raises(ValueError) as err:
        load_pretrained("gpt2", 50257)
    message = str(err.value)
    assert "\n" not in message and "'gpt2'" in message and "locate the file on the Hub" in message
    assert "give a local tokenizer.json" in message and "--tokenizer PATH" in message
    assert not hub_cache_path("gpt2").exists()


def test_the_real_hub_download_offline_is_one_error_line_from_train_py(tmp_path):
    """Tokenizer.from_pretrained itself, with huggingface_hub told it is offline: no network is tried."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "TENSORLAB_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--tokenizer", "gpt2", "--vocab-size", "50257", "--max-steps", "1"]
        + ["--data", str(ROOT / "tests" / "data" / "small_corpus.txt")],  # a corpus, so the tokenizer is what fails
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith("train.py: error:")]
    assert done.returncode == 2 and len(errors) == 1, done.stderr[-2000:]
    assert "tokenizer 'gpt2' is not a local file or folder" in errors[0] and "--tokenizer PATH" in errors[0]


def test_a_hub_tokenizer_is_cached_once_and_then_used_without_network(offline_hub, monkeypatch):
    calls = []
    text = json.dumps(hub_layout_json(), ensure_ascii=False)
    monkeypatch.setattr(pretrained_tokenizer, "fetch_from_hub", lambda name: calls.append(name) or text)
    first = load_pretrained("openai-community/gpt2", V)
    cached = offline_hub / "tokenizers" / "openai-community--gpt2.json"
    assert calls == ["openai-community/gpt2"] and cached.is_file() and record_path(cached).is_file()

    def no_network(name):
        raise AssertionError("downloaded again")

    monkeypatch.setattr(pretrained_tokenizer, "fetch_from_hub", no_network)
    again = load_pretrained("openai-community/gpt2", V)
    assert again.fingerprint() == first.fingerprint()
    assert again.encode(TEXT).tolist() == first.encode(TEXT).tolist()


def test_a_cached_hub_tokenizer_changed_since_its_download_is_refused(offline_hub, monkeypatch):
    text = json.dumps(hub_layout_json(), ensure_ascii=False)
    monkeypatch.setattr(pretrained_tokenizer, "fetch_from_hub", lambda name: text)
    load_pretrained("gpt2", V)
    cached = hub_cache_path("gpt2")
    swapped = text.replace('"h e"', "HE").replace('"o n"', '"h e"').replace("HE", '"o n"')  # same size
    assert swapped != text and len(swapped) == len(text)
    cached.write_text(swapped, encoding="utf-8")
    with pytest.raises(CacheError) as err:
        load_pretrained("gpt2", V)
    assert "\n" not in str(err.value) and str(cached) in str(err.value) and "delete" in str(err.value)


def test_a_pretrained_tokenizer_with_another_pretokenizer_is_a_config_problem():
    cfg = TrainConfig().replace(tokenizer="gpt2", pretokenizer="whitespace", vocab_size=50257)
    assert any(p.startswith("pretokenizer (--pretokenizer) must be bytelevel") for p in cfg.problems())
    assert TrainConfig().replace(tokenizer="gpt2", vocab_size=V).problems() == []  # below 260: its own size


def stories(n):
    names, things = ["Lily", "Tom", "Sue", "Max", "Ben"], ["ball", "kite", "cat", "boat", "tree"]
    return [
        f"Once upon a time, {names[i % 5]} found a {things[(i // 5) % 5]}. {names[i % 5]} was happy and played "
        f"all day with the {things[(i // 5) % 5]} and a friend. The end.\n"
        for i in range(n)
    ]


def test_a_run_trained_with_a_pretrained_tokenizer_then_eval_and_generate(tmp_path, capsys):
    folder = write_gpt2_files(tmp_path / "gpt2")
    data = tmp_path / "stories"
    data.mkdir()
    for i, story in enumerate(stories(40)):
        (data / f"{i:03d}.txt").write_text(story, encoding="utf-8")
    out = tmp_path / "run"
    argv = ["--config", ROOT / "configs" / "tiny.json", "--data", data, "--tokenizer", folder, "--out", out]
    assert train.main([str(a) for a in argv]) == 2  # tiny.json's vocab_size 300 is not the tokenizer's
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 1 and f"has {V} tokens, but vocab_size (--vocab-size) is 300" in errors[0]
    argv += ["--vocab-size", V, "--max-steps", 4, "--eval-interval", 2, "--no-report"]
    assert train.main([str(a) for a in argv]) == 0, capsys.readouterr().err[-1500:]
    capsys.readouterr()
    pretrained = load_pretrained(str(folder), V)
    saved = BPETokenizer.load(out / "tokenizer.json")
    assert saved.fingerprint() == pretrained.fingerprint()  # the pretrained one, not one trained on the stories
    assert read_checkpoint(out / "checkpoints" / "latest")["tokenizer_sha256"] == pretrained.fingerprint()
    assert read_checkpoint(out / "checkpoints" / "latest")["model"]["tok_emb.weight"].shape[0] == V

    assert train.main(["eval", str(out)]) == 0
    assert "val loss" in capsys.readouterr().out
    assert train.main(["generate", str(out), "--prompt", "Once upon a", "--max-new-tokens", "12", "--seed", "1"]) == 0
    sample = capsys.readouterr().out
    assert sample.startswith("Once upon a") and len(sample) > len("Once upon a\n")  # 4 steps: random bytes

    status = train.main(["--resume", str(out), "--tokenizer", str(tmp_path / "other.json"), "--max-steps", "6"])
    assert status == 2 and "cannot resume" in capsys.readouterr().err  # a resume keeps the run's tokenizer
