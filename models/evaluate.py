"""One pass over validation tokens: mean loss, perplexity and bits per byte.

The windows come from models.data.eval_windows: non-overlapping, so every validation
token after the first is predicted exactly once. For a token sequence with N predicted
tokens that decode to N_bytes UTF-8 bytes:

    loss           = (sum of -ln p(token)) / N                nats per token
    perplexity     = exp(loss)
    bits per byte  = (sum of -ln p(token)) / (ln 2 * N_bytes)

Bits per byte does not depend on how text is cut into tokens (with the bytelevel
tokenizer), so runs with different vocabularies can be compared.
"""

import numpy as np

from models.data import bits_per_byte, eval_windows, perplexity
from models.transformer import inference


def device_of(model):
    """'cpu' or 'cuda': where the model's parameters live."""
    return model.parameters()[0].device


def evaluate(model, ids, tokenizer, batch_size, max_batches=0):
    """{"loss", "perplexity", "bits_per_byte", "tokens", "bytes"} of `model` on token `ids`.

    With max_batches > 0 only that many batches of full windows are used, spread evenly
    over the text (the same ones every time, so successive evaluations compare fairly);
    0 means every window, the shorter last one included.
    """
    batches = list(eval_windows(ids, model.config.context_len, batch_size))
    if 0 < max_batches < len(batches):
        full = [b for b in batches if b[0].shape[1] == model.config.context_len]
        picks = np.linspace(0, len(full) - 1, min(max_batches, len(full))).round().astype(int)
        batches = [full[i] for i in picks]
    total_nll, n_tokens, n_bytes = 0.0, 0, 0
    with inference(model):
        for x, y in batches:  # (b, T), (b, T)
            _, loss = model(x, y)  # mean over b * T (ids moved by the model)
            total_nll += float(loss.item()) * y.size
            n_tokens += y.size
            n_bytes += tokenizer.token_bytes(y.ravel())
    mean = total_nll / n_tokens
    return {
        "loss": mean,
        "perplexity": perplexity(mean),
        "bits_per_byte": bits_per_byte(total_nll, n_bytes),
        "tokens": n_tokens,
        "bytes": n_bytes,
    }
