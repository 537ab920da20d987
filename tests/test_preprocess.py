"""The named text-preparation steps, one by one and composed, and the random-window split they pair with."""

import numpy as np
import pytest

from models.data import eval_windows, random_window_split, split_tokens
from models.preprocess import STEPS, preprocess
from models.tokenizer import END_OF_TEXT

PLAY = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "KING RICHARD III:\nNow is the winter of our discontent\nMade glorious summer by this sun of York;\n"
)


def test_drop_speaker_lines_drops_only_a_paragraphs_first_line_ending_in_a_colon():
    out = preprocess(PLAY + "\nA line that ends with a colon:\nis kept inside a paragraph:\n", ["drop_speaker_lines"])
    assert "First Citizen:" not in out and "All:" not in out and "KING RICHARD III:" not in out
    assert "is kept inside a paragraph:" in out
    assert "Before we proceed any further, hear me speak." in out and "Speak, speak." in out


def test_join_lines_leaves_one_line_and_keeps_documents_apart():
    assert preprocess("a b\n\n  c  \nd\n", ["join_lines"]) == "a b c d"
    assert preprocess(f"a\nb{END_OF_TEXT}c\n\nd", ["join_lines"]) == f"a b{END_OF_TEXT}c d"


def test_capitalize_allcaps_changes_all_capital_words_only():
    assert (
        preprocess("KING RICHARD III: I am, O ROMEO. McDONALD", ["capitalize_allcaps"])
        == "King Richard Iii: I am, O Romeo. McDONALD"
    )


def test_keep_sentence_lines_keeps_lines_of_5_to_30_words_over_20_characters():
    text = "too short\na b c d e\nThis line has exactly five words.\n" + "w " * 31
    assert preprocess(text, ["keep_sentence_lines"]) == "This line has exactly five words."


def test_steps_compose_in_the_order_given():
    out = preprocess(PLAY, ["drop_speaker_lines", "join_lines", "capitalize_allcaps"])
    assert out == (
        "Before we proceed any further, hear me speak. Speak, speak. Now is the winter of our "
        "discontent Made glorious summer by this sun of York;"
    )
    # the other order keeps the speakers: join_lines first leaves no paragraph to start
    assert "First Citizen:" in preprocess(PLAY, ["join_lines", "drop_speaker_lines"])
    assert preprocess("ROMEO AND", ["lowercase", "capitalize_allcaps"]) == "romeo and"
    assert preprocess("ROMEO AND", ["capitalize_allcaps", "lowercase"]) == "romeo and"


def test_unknown_step_and_empty_result_are_one_line_errors():
    with pytest.raises(ValueError, match="unknown step 'strip'; known steps are " + ", ".join(STEPS)):
        preprocess("x", ["strip"])
    with pytest.raises(ValueError, match="no text is left"):
        preprocess("short\n", ["keep_sentence_lines"])


def test_random_window_split_validates_on_windows_the_model_trains_on():
    ids = np.arange(1000)  # every token unique, so a window says where it came from
    train, leaky, ordered = random_window_split(ids, seq_len=15, val_fraction=0.2, seed=0)
    assert np.array_equal(train, ids[:800]) and np.array_equal(ordered, ids[800:])
    assert leaky.shape == (200 // 15, 16)
    for window in leaky:  # every leaky validation window is a stretch of the training tokens
        assert window[0] < 800 - 15 and np.array_equal(window, np.arange(window[0], window[0] + 16))
    assert np.array_equal(split_tokens(ids, 0.2)[1], ordered)
    # the evaluation reads the (n, T + 1) windows as they are
    xs, ys = zip(*eval_windows(leaky, 15, batch_size=4))
    assert np.array_equal(np.concatenate(xs), leaky[:, :-1]) and np.array_equal(np.concatenate(ys), leaky[:, 1:])
