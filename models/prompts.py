"""Where sample prompts come from: the config's own list, or the corpus itself.

Without prompts in the config, the samples and the top-k table start from the openings of a
few validation passages, so a run on any corpus (a manual, a code base) is prompted with its
own kind of text, never with Shakespeare's names.
"""

from pathlib import Path

import numpy as np

N_PROMPTS = 3
PROMPT_TOKENS = 8
MAX_PROMPTS = 20  # a report samples each prompt at every setting (a corpus given as --prompts: a minute or hours)


def corpus_prompts(val_ids, tokenizer, n=N_PROMPTS, n_tokens=PROMPT_TOKENS):
    """The first `n_tokens` tokens of `n` evenly spaced validation passages, each starting after a newline if
    one is near (else where it falls), decoded to text."""
    ids = np.ravel(val_ids)  # the random-window split's (k, T + 1) windows read one after another
    prompts = []
    for start in np.linspace(0, max(len(ids) - n_tokens, 0), n).astype(int):
        labels = tokenizer.token_strings(ids[start : start + 64])
        after_newline = next((i + 1 for i, label in enumerate(labels[:-n_tokens]) if label.endswith("↵")), 0)
        text = tokenizer.decode(ids[start + after_newline : start + after_newline + n_tokens])
        if text.strip() and text not in prompts:
            prompts.append(text)
    return prompts or [tokenizer.decode(ids[:n_tokens])]


def run_prompts(configured, val_ids, tokenizer):
    """The config's prompts when it names some, else corpus_prompts."""
    return list(configured) or corpus_prompts(val_ids, tokenizer)


def read_prompts_file(path):
    """Prompts from a file, one per line (a literal \\n in a line stands for a newline); empty lines skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"--prompts {path}: cannot read it as UTF-8 text ({err})") from None
    prompts = tuple(line.replace("\\n", "\n") for line in lines if line.strip())
    if not prompts:
        raise ValueError(f"--prompts {path}: the file holds no prompt (one per line)")
    return prompts
