"""Named text-preparation steps, applied in the order a config lists them (its `preprocess` field).

Each step is a function str -> str, so they compose: ["drop_speaker_lines", "join_lines"] first drops
the speaker names, then joins what is left into one line. They reproduce what the reference
reports did to Tiny Shakespeare before tokenizing:

    drop_speaker_lines   drop a paragraph's first line when it ends in ':' ("First Citizen:")
    join_lines           drop blank lines and join the rest with single spaces (no newlines remain)
    capitalize_allcaps   "ROMEO" -> "Romeo": words of two or more letters, all capitals
    keep_sentence_lines  keep only lines of 5 to 30 words and more than 20 characters
    lowercase            every letter in lower case
"""

import re

from models.tokenizer import END_OF_TEXT  # separates the documents of a corpus directory; steps keep it

_ALLCAPS_WORD = re.compile(r"\b[A-Z][A-Z]+\b")


def drop_speaker_lines(text):
    """Drop the first line of every paragraph (after a blank line or at the start) if it ends with ':'."""
    out, paragraph_start = [], True
    for line in text.split("\n"):
        if not (paragraph_start and line.rstrip().endswith(":")):
            out.append(line)
        paragraph_start = line.strip() == "" or line == END_OF_TEXT
    return "\n".join(out)


def join_lines(text):
    """Blank lines dropped, the other lines stripped and joined with one space each (documents stay apart)."""
    documents = text.split(END_OF_TEXT)
    joined = (" ".join(line.strip() for line in doc.split("\n") if line.strip()) for doc in documents)
    return END_OF_TEXT.join(joined)


def capitalize_allcaps(text):
    """Every all-capitals word of two or more letters capitalised: "KING RICHARD" -> "King Richard"."""
    return END_OF_TEXT.join(_ALLCAPS_WORD.sub(lambda m: m.group().capitalize(), doc) for doc in text.split(END_OF_TEXT))


def keep_sentence_lines(text):
    """Only the lines of 5 to 30 words and more than 20 characters (as report 000 kept "clean sentences")."""
    return "\n".join(
        line
        for line in text.split("\n")
        if line == END_OF_TEXT or (5 <= len(line.split()) <= 30 and len(line.strip()) > 20)
    )


def lowercase(text):
    return END_OF_TEXT.join(doc.lower() for doc in text.split(END_OF_TEXT))


STEPS = {f.__name__: f for f in (drop_speaker_lines, join_lines, capitalize_allcaps, keep_sentence_lines, lowercase)}


def preprocess(text, steps):
    """`text` after each named step in turn; an unknown name raises ValueError listing the known ones."""
    for name in steps:
        if name not in STEPS:
            raise ValueError(f"preprocess: unknown step {name!r}; known steps are {', '.join(STEPS)}")
        text = STEPS[name](text)
    if not text.strip():
        raise ValueError(f"preprocess: no text is left after the steps {', '.join(steps)}")
    return text
