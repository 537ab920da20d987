"""Write tests/data/small_corpus.txt: about 64 KB of made-up dialogue in Tiny Shakespeare's layout.

The tests need a corpus in every clone, without ../shared and without a download. This
script makes one from a small hand-written grammar (no text copied from anywhere): speeches
as "NAME:\\nline\\nline\\n\\n", ASCII only, the first speaker "First Citizen" as in the real
file. Seeded, so running it again gives the same bytes (tests/test_corpus.py checks that).

    python tests/data/make_small_corpus.py      # rewrites tests/data/small_corpus.txt
"""

import random
from pathlib import Path

TARGET_BYTES = 64_000
OUT = Path(__file__).resolve().parent / "small_corpus.txt"

SPEAKERS = [
    "First Citizen",
    "Second Citizen",
    "MENENIUS",
    "CORIOLANUS",
    "VOLUMNIA",
    "KING HENRY VI",
    "QUEEN MARGARET",
    "GLOUCESTER",
    "ROMEO",
    "JULIET",
    "Nurse",
    "FRIAR LAURENCE",
    "LUCIO",
    "ISABELLA",
    "DUKE VINCENTIO",
    "PETRUCHIO",
    "KATHARINA",
    "Messenger",
    "Servant",
    "All",
]
NOUNS = [
    "lord",
    "lady",
    "king",
    "queen",
    "heart",
    "crown",
    "sword",
    "night",
    "day",
    "grief",
    "love",
    "blood",
    "honour",
    "city",
    "house",
    "friend",
    "brother",
    "father",
    "mother",
    "son",
    "tongue",
    "hand",
    "eye",
    "soul",
    "heaven",
    "world",
    "death",
    "life",
    "war",
    "peace",
    "fortune",
    "tears",
    "head",
    "gate",
]
ADJECTIVES = [
    "noble",
    "gentle",
    "sweet",
    "fair",
    "proud",
    "poor",
    "good",
    "bloody",
    "true",
    "false",
    "old",
    "young",
    "dear",
    "cruel",
    "wretched",
    "honest",
    "royal",
    "foul",
    "brave",
    "heavy",
]
VERBS = [
    "love",
    "hate",
    "know",
    "fear",
    "serve",
    "follow",
    "curse",
    "bless",
    "trust",
    "leave",
    "find",
    "seek",
    "keep",
    "hear",
    "see",
    "kill",
    "save",
    "pardon",
    "remember",
    "forget",
]
OPENINGS = ["O", "Alas", "Nay", "Ay", "Why", "Come", "Peace", "Good morrow", "Hark", "Well", "Now", "Fie"]
PRONOUNS = ["I", "we", "you", "thou", "he", "she", "they"]
TEMPLATES = [
    "{open}, {adj} {noun}, {pron} {verb} thee not.",
    "{pron} {verb} the {noun} of my {adj} {noun2}.",
    "What {noun} is this, that {pron} should {verb} it so?",
    "My {noun} is {adj}, and my {noun2} is {adj2}.",
    "{open}! the {adj} {noun} doth {verb} our {noun2}.",
    "Then let us {verb} the {noun}, and {verb2} the {noun2}.",
    "Thy {noun} shall {verb} me, {adj} {noun2}.",
    "Is not the {noun} as {adj} as the {noun2}?",
    "{open}, {open2}; I will {verb} him to the {noun}.",
    "Go, {verb} my {noun}; the {adj} {noun2} stays for none.",
    "By my {noun}, {pron} {verb} too much of {noun2}.",
    "And so, farewell: the {noun} is {adj}.",
]


def line(rng):
    """One line of verse-like dialogue from the grammar."""
    template = rng.choice(TEMPLATES)
    text = template.format(
        open=rng.choice(OPENINGS),
        open2=rng.choice(OPENINGS).lower(),
        adj=rng.choice(ADJECTIVES),
        adj2=rng.choice(ADJECTIVES),
        noun=rng.choice(NOUNS),
        noun2=rng.choice(NOUNS),
        verb=rng.choice(VERBS),
        verb2=rng.choice(VERBS),
        pron=rng.choice(PRONOUNS),
    )
    return text[0].upper() + text[1:]


def make_corpus(seed=0, target_bytes=TARGET_BYTES):
    """Speeches "NAME:\\nlines\\n\\n" until the text is at least target_bytes long."""
    rng = random.Random(seed)
    speeches, size, speaker = [], 0, SPEAKERS[0]
    while size < target_bytes:
        speech = f"{speaker}:\n" + "\n".join(line(rng) for _ in range(rng.randint(1, 4))) + "\n\n"
        speeches.append(speech)
        size += len(speech)
        speaker = rng.choice([s for s in SPEAKERS if s != speaker])
    return "".join(speeches)[:-1]  # ends with one newline, as the real file does


if __name__ == "__main__":
    OUT.write_text(make_corpus(), encoding="ascii", newline="\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
