"""The language model built on tensorlab: its corpus, tokenizer, data and model."""
