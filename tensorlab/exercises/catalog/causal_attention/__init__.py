"""causal_attention: y = softmax(q k^T / sqrt(D) + causal mask) v: matmul and softmax together."""

import numpy as np

import tensorlab.functional as F
from tensorlab.exercises.check import Exercise
from tensorlab.exercises.gradient import Case, no_settings
from tensorlab.exercises.inputs import inputs, normal
from tensorlab.exercises.slips import Slip, attempt


def graph(q, k, v):
    T, D = q.shape[-2:]
    s = q @ k.swapaxes(-1, -2) * (1 / np.sqrt(D))
    s = F.masked_fill(s, ~np.tril(np.ones((T, T), dtype=bool)), -np.inf)
    p = F.softmax(s, axis=-1)
    return p @ v, {"S": s, "P": p}


def _scores_up_to_1000(*shape):
    """q, k, v whose largest score a query sees, q k^T / sqrt(D), is exactly 1,000 (on every draw): exp overflows
    there unless the row's max goes first."""

    def make(rng):
        q, k, v = (rng.standard_normal(shape) for _ in range(3))
        rows, columns = np.tril_indices(shape[-2])
        seen = (q @ k.swapaxes(-1, -2))[..., rows, columns] / np.sqrt(shape[-1])
        largest = seen.flat[np.abs(seen).argmax()]
        scale = np.sqrt(1000.0 / abs(largest))
        return [q * scale, k * scale * np.sign(largest), v]

    return make


def _attention(gq=None, gk=None, gv=None, g_s=None, g_p=None, leaks=False):
    """The attention gradients with pieces replaced.

    The pieces: gq(gS, k, scale), gk(gS, q, scale), gv(P, gy), g_s(P, gP), g_p(gy, v); g_s's gS is 0 where the mask
    hides a key, unless it `leaks` (a formula whose gP term is not multiplied by P).
    """

    def compute(s):
        q, k = s.x["q"], s.x["k"]
        P, gP = s.value["P"], s.grad["P"] if g_p is None else g_p(s.gy, s.x["v"])
        scale = 1 / np.sqrt(q.shape[-1])
        if g_s is None and g_p is None:
            gS = s.grad["S"]
        else:  # the softmax step, as the engine's softmax backward does it, unless g_s replaces it
            gS = (g_s or _softmax_step)(P, gP)
            gS = gS if leaks else np.where(P > 0, gS, 0.0)
        out = {}
        if gq or g_s or g_p:
            out["q"] = gq(gS, k, scale) if gq else gS @ k * scale
        if gk or g_s or g_p:
            out["k"] = gk(gS, q, scale) if gk else gS.swapaxes(-1, -2) @ q * scale
        if gv:
            out["v"] = gv(P, s.gy)
        return out

    return attempt(compute)


def _softmax_step(P, gP):
    return P * (gP - (gP * P).sum(axis=-1, keepdims=True))


def _attention_masked(k):
    """Every gradient with P recomputed under np.tril(..., k): k=1 lets each query see the next key."""

    def compute(s):
        q, key = s.x["q"], s.x["k"]
        T, D = q.shape[-2:]
        scores = np.where(np.tril(np.ones((T, T), dtype=bool), k), q @ key.swapaxes(-1, -2) / np.sqrt(D), -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        P = e / e.sum(axis=-1, keepdims=True)
        gS = _softmax_step(P, s.grad["P"])
        return {
            "q": gS @ key / np.sqrt(D),
            "k": gS.swapaxes(-1, -2) @ q / np.sqrt(D),
            "v": P.swapaxes(-1, -2) @ s.gy,
        }

    return attempt(compute)


CAUSAL_ATTENTION = [
    Slip(
        "attention_scale_inverted",
        "You multiplied by sqrt(D) where the forward divides by it: the scores are "
        "q k^T / sqrt(D), so gq and gk each get the factor 1/sqrt(D) (not sqrt(D)).",
        _attention(gq=lambda gS, k, c: gS @ k / c, gk=lambda gS, q, c: gS.swapaxes(-1, -2) @ q / c),
    ),
    Slip(
        "attention_scale_missing",
        "The 1/sqrt(D) scale of the scores is missing from your gq and gk: S = q k^T / sqrt(D), so both carry it.",
        _attention(gq=lambda gS, k, c: gS @ k, gk=lambda gS, q, c: gS.swapaxes(-1, -2) @ q),
    ),
    Slip(
        "attention_scale_twice_in_gq",
        "Your gq carries the 1/sqrt(D) scale twice: S = q k^T / sqrt(D) scales once, so gq = gS k / sqrt(D) "
        "(if gS already holds the scale, do not apply it again).",
        _attention(gq=lambda gS, k, c: gS @ k * c * c),
    ),
    Slip(
        "attention_scale_twice_in_gk",
        "Your gk carries the 1/sqrt(D) scale twice: S = q k^T / sqrt(D) scales once, so gk = gS^T q / sqrt(D) "
        "(if gS already holds the scale, do not apply it again).",
        _attention(gk=lambda gS, q, c: gS.swapaxes(-1, -2) @ q * c * c),
    ),
    Slip(
        "attention_gk_not_transposed",
        "In gk, gS is not transposed: S = q k^T, so gk = gS^T q / sqrt(D). gS q "
        "mixes up which position is the query (rows of S) and which the key (columns).",
        _attention(gk=lambda gS, q, c: gS @ q * c),
    ),
    Slip(
        "attention_gq_transposed",
        "In gq, gS is transposed: gq = gS k / sqrt(D) (rows of S are queries).",
        _attention(gq=lambda gS, k, c: gS.swapaxes(-1, -2) @ k * c),
    ),
    Slip(
        "attention_gq_k_transposed",
        "In gq, k is transposed: S = q k^T, so gq = gS k / sqrt(D) (k as it is; the square shape hid the slip).",
        _attention(gq=lambda gS, k, c: gS @ k.swapaxes(-1, -2) * c),
    ),
    Slip(
        "attention_gp_v_not_transposed",
        "In gP, v is not transposed: y = P v, so gP = gy v^T (the square shape hid the slip).",
        _attention(g_p=lambda gy, v: gy @ v),
    ),
    Slip(
        "attention_gv_not_transposed",
        "In gv, P is not transposed: y = P v, so gv = P^T gy.",
        _attention(gv=lambda P, gy: P @ gy),
    ),
    Slip(
        "attention_softmax_diagonal_only",
        "In the softmax step you used P(1 - P), the Jacobian's diagonal only. "
        "Every weight of a row depends on every score of the row: gS = P * (gP - rowsum(gP * P)).",
        _attention(g_s=lambda P, gP: P * (1 - P) * gP),
    ),
    Slip(
        "attention_softmax_diagonal_without_p",
        "In the softmax step the diagonal of your Jacobian is 1 where it is P: dP_ij/dS_ik = P_ij (delta_jk - "
        "P_ik), so P multiplies gP too: gS = P * (gP - rowsum(gP * P)), not gP - P * rowsum(gP * P).",
        _attention(g_s=lambda P, gP: gP - P * (gP * P).sum(axis=-1, keepdims=True), leaks=True),
    ),
    Slip(
        "attention_softmax_rowsum_dropped",
        "In the softmax step the row-sum term is missing: gS = P * gP alone. "
        "Subtract the sum over each row of gP * P before multiplying by P.",
        _attention(g_s=lambda P, gP: P * gP),
    ),
    Slip(
        "attention_softmax_rowsum_sign",
        "In the softmax step the row-sum term has the wrong sign: it is subtracted, gS = P * (gP - rowsum(gP * P)).",
        _attention(g_s=lambda P, gP: P * (gP + (gP * P).sum(axis=-1, keepdims=True))),
    ),
    Slip(
        "attention_softmax_rowsum_over_queries",
        "In the softmax step your sum runs along axis -2, over the queries (a column of P): each row of P is "
        "one query's softmax, so the sum of gP * P runs along the last axis, over the keys.",
        _attention(g_s=lambda P, gP: P * (gP - (gP * P).sum(axis=-2, keepdims=True))),
    ),
    Slip(
        "attention_softmax_no_keepdims",
        "In the softmax step your row sum lost its axis (no keepdims=True) and NumPy broadcast it along the "
        "wrong one: row i got the sum of another row. Keep it: (gP * P).sum(axis=-1, keepdims=True).",
        _attention(g_s=lambda P, gP: P * (gP - (gP * P).sum(axis=-1)[..., None, :])),
    ),
    Slip(
        "attention_mask_off_by_one",
        "Your mask is off by one: the weights you recomputed let each query see the next position too "
        "(np.tril(..., k=1)). The causal mask keeps key j for query i when j <= i: np.tril(np.ones((T, T))), "
        "or use the P that forward saved.",
        _attention_masked(1),
    ),
]


def _attention_hint(inputs, name, report, context):
    """gv right, gq or gk wrong: the slip is past gP (softmax step or the scores' products)."""
    if name == "v" or not context.reports["v"].passed:
        return []
    if name == "q" or context.reports["q"].passed:  # say it once, at the first wrong input
        return [
            "Your gv is right, so y = P v is undone correctly; the slip comes after: in the softmax step "
            "(from gP to gS) or in S = q k^T / sqrt(D) (from gS to gq and gk)."
        ]
    return []


def _causality_probe(backward, inputs):
    """Changing gy at query i only must not change the gradients of keys and values after i: the mask in backward.

    Query i sees keys 0..i only, so gk[j] and gv[j] for j > i cannot depend on gy[i]. Each query is tried in turn,
    the first that leaks named: at scores near 1,000 a row's softmax can be one-hot, and then an unmasked row leaks
    nothing to measure. Two gy that differ at query i only are compared, so a term that does not depend on gy at all
    cannot look like a leak.
    """
    q = inputs[0]
    rng = np.random.default_rng(7)
    gy = rng.standard_normal(q.shape)
    leaks = []  # a single position has no later one to leak to
    try:
        before = backward(gy)
        for i in range(q.shape[-2] - 1):
            changed = gy.copy()
            changed[..., i, :] += rng.standard_normal(q.shape[-1])
            leaks = _leaks(before, backward(changed), i, q.shape)
            if leaks:
                break
    except Exception:  # noqa: BLE001 (the case itself reports what the backward raises)
        return []
    if not leaks:
        return []
    query = "the first query" if i == 0 else f"query {i}"
    return [
        f"Gradient leaks to future positions: changing gy at position {i} ({query}) changes {' and '.join(leaks)}. "
        f"Query {i} sees only the keys up to position {i} (the causal mask hides the later ones), so nothing of its "
        f"gradient may reach a later key or value: apply the mask in backward too (the P forward saved is 0 there; a "
        f"softmax recomputed without the mask is not)."
    ]


def _leaks(before, after, i, shape):
    """['your gk at positions [2, 3]', ...]: the later positions whose gk and gv moved when gy at query i changed."""
    leaks = []
    for name, g, h in (("gk", before[1], after[1]), ("gv", before[2], after[2])):
        if np.shape(g) == shape and np.shape(h) == shape:
            with np.errstate(invalid="ignore"):  # inf - inf where a softmax without the max overflowed
                moved = np.abs(np.asarray(h) - np.asarray(g))[..., i + 1 :, :] > 1e-12
            where = sorted({int(j) + i + 1 for j in np.argwhere(moved)[:, -2]})
            if where:
                leaks.append(f"your {name} at positions {where}")
    return leaks


def _drawn_heads(rng):
    """q, k, v of a drawn (B, H, T, D): batches and heads beyond one, a single position, a single channel."""
    shape = tuple(int(n) for n in rng.integers(1, [4, 4, 6, 6]))
    return [rng.standard_normal(shape) for _ in range(3)]


EXERCISE = Exercise(
    "causal_attention",
    "y = softmax(q k^T / sqrt(D) + causal mask) v: matmul and softmax together",
    [
        Case(
            "CausalAttention",
            ("q", "k", "v"),
            make,
            graph,
            draw=draw,
            slips=CAUSAL_ATTENTION,
            hint=_attention_hint,
            probe=_causality_probe,
        )
        for make, draw in [
            (inputs(*[normal(1, 2, 3, 5)] * 3), None),
            (inputs(*[normal(1, 3, 4, 4)] * 3), None),
            (_scores_up_to_1000(1, 2, 4, 4), None),  # a score of 1,000: exp overflows unless the max goes first
            (_drawn_heads, no_settings),  # 50 shapes drawn afresh on each run
        ]
    ],
)
