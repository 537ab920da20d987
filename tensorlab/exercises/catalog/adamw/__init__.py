"""adamw: one AdamW step in NumPy, checked against tensorlab.optim.AdamW, and the slip named.

Not a gradient check, but the same kind of report. Each case runs three steps from m = v = 0,
from a parameter and gradients drawn fresh on each run (a printed seed; --seed replays it),
with its own settings (the second has large lr, weight decay and eps and unusual betas, so
that every slip changes the numbers). At every step the student's function gets the right
state from before the step, so the first step that goes wrong is diagnosed on its own:
which of param, m and v is off, by how much, and which known slip reproduces the student's
numbers exactly (each slip is AdamW with one thing changed; see SLIPS), or two of them at once.
"""

from functools import partial
from itertools import combinations

import numpy as np

from tensorlab.exercises.check import Exercise, Probe
from tensorlab.exercises.gradient import RTOL
from tensorlab.exercises.watch import engine_use_line
from tensorlab.optim import AdamW
from tensorlab.tensor import Tensor

STEPS = 3
SHAPE = (3, 4)
CASES = [
    dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2),
    dict(lr=0.1, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.5),
]
QUANTITIES = ("param", "m", "v")

# slip -> what to tell the student when their numbers match AdamW with that one change
SLIPS = {
    "l2": "You added weight_decay * param to the gradient (Adam with L2 regularisation). AdamW decouples the "
    "decay: leave the gradient alone and shrink the weight itself, param = param - lr * weight_decay * param.",
    "no_decay": "There is no weight decay in your update: first shrink the weight, "
    "param = param - lr * weight_decay * param.",
    "decay_without_lr": "Your weight decay is param - weight_decay * param; AdamW (and torch) scale it by the "
    "learning rate: param = param - lr * weight_decay * param.",
    "decay_after": "You apply the weight decay after the Adam update, to the updated param. Decay the weight "
    "you were given first, then subtract the Adam update.",
    "m_betas": "m is off: beta1 and 1 - beta1 are swapped. m = beta1 * m + (1 - beta1) * grad.",
    "v_betas": "v is off: beta2 and 1 - beta2 are swapped. v = beta2 * v + (1 - beta2) * grad^2.",
    "v_not_squared": "v is off: it is the running mean of the squared gradient, "
    "v = beta2 * v + (1 - beta2) * grad * grad.",
    "no_bias_correction": "You skipped the bias correction. m and v start at 0, so early on they are too small: "
    "divide m by (1 - beta1**step) and v by (1 - beta2**step) before the update.",
    "no_bias_correction1": "The bias correction of m is missing: m_hat = m / (1 - beta1**step).",
    "no_bias_correction2": "The bias correction of v is missing: v_hat = v / (1 - beta2**step).",
    "step_plus_one": "Your bias correction uses step + 1; `step` is already t, counting from 1: use 1 - beta**step.",
    "step_minus_one": "Your bias correction uses step - 1, which divides by 1 - beta**0 = 0 at the first step; "
    "`step` is t, counting from 1: use 1 - beta**step.",
    "eps_inside_sqrt": "eps belongs outside the square root: divide by sqrt(v_hat) + eps, not sqrt(v_hat + eps).",
    "eps_outside": "Your eps is added to param, outside the fraction: it belongs in the denominator, "
    "param - lr * m_hat / (sqrt(v_hat) + eps), brackets around it.",
    "decay_brackets": "Your weight decay multiplies param by (1 - lr) * weight_decay: the brackets belong around "
    "the whole factor, param * (1 - lr * weight_decay).",
    "no_sqrt": "The denominator needs a square root: sqrt(v_hat) + eps (v is a mean of squares).",
    "v_abs": "v is off: it is the running mean of the squared gradient, grad * grad, not of abs(grad): "
    "v = beta2 * v + (1 - beta2) * grad * grad.",
    "v_correction_beta1": "The bias correction of v uses beta1; each moment is corrected with its own beta: "
    "v_hat = v / (1 - beta2**step).",
    "power_as_product1": "The bias correction of m multiplies where it raises to a power: 1 - b1 * step instead of "
    "1 - b1 ** step (beta1 to the power step).",
    "power_as_product": "Your bias corrections multiply where they raise to a power: 1 - b1 * step instead of "
    "1 - b1 ** step (and 1 - b2 ** step).",
    "power_of_difference": "Your bias corrections raise 1 - beta to the power step, (1 - beta1)**step, where only "
    "beta is raised: 1 - beta1**step (and 1 - beta2**step). The two agree at step 1 only.",
    "update_sign": "Your update has the wrong sign: it adds lr * m_hat / (sqrt(v_hat) + eps) to param; a step "
    "goes against the gradient, so subtract it.",
    "no_lr": "The update is missing the learning rate: param = param - lr * m_hat / (sqrt(v_hat) + eps).",
    "returns_m_hat": "You returned m_hat as the new m: the state to keep is the uncorrected running mean m "
    "(the next step corrects it again); m_hat is used only in this step's update.",
    "returns_v_hat": "You returned v_hat as the new v: the state to keep is the uncorrected running mean v "
    "(the next step corrects it again); v_hat is used only in this step's update.",
    "ignores_state": "You ignore the m and v passed in (as if every step were the first): start from them, "
    "m = beta1 * m + ..., and return the new ones.",
    "m_forgets": "m is off: it forgets the m passed in, m = (1 - beta1) * grad; it is a running mean, "
    "m = beta1 * m + (1 - beta1) * grad.",
    "v_forgets": "v is off: it forgets the v passed in, v = (1 - beta2) * grad^2; it is a running mean, "
    "v = beta2 * v + (1 - beta2) * grad * grad.",
    "m_keeps_whole": "m is off: the m passed in is kept whole (m + (1 - beta1) * grad); it decays by beta1 each "
    "step: m = beta1 * m + (1 - beta1) * grad.",
    "v_keeps_whole": "v is off: the v passed in is kept whole (v + (1 - beta2) * grad^2); it decays by beta2 each "
    "step: v = beta2 * v + (1 - beta2) * grad * grad.",
    "decay_without_weight_decay": "Your weight decay is param - lr * param: weight_decay is missing from it; "
    "param = param - lr * weight_decay * param.",
    "m_without_grad": "m is off: the gradient never enters it (m = beta1 * m); m = beta1 * m + (1 - beta1) * grad.",
    "v_without_grad": "v is off: the gradient never enters it (v = beta2 * v); "
    "v = beta2 * v + (1 - beta2) * grad * grad.",
    "m_grad_unweighted": "m is off: grad is added without its weight 1 - beta1; m = beta1 * m + (1 - beta1) * grad.",
    "v_grad_unweighted": "v is off: grad^2 is added without its weight 1 - beta2; "
    "v = beta2 * v + (1 - beta2) * grad * grad.",
    "no_eps": "eps is missing from the denominator: divide by sqrt(v_hat) + eps, which keeps the step finite "
    "where v_hat is 0.",
    "correction_without_power1": "The bias correction of m uses 1 - beta1 where 1 - beta1**step belongs (beta1 "
    "to the power step): m_hat = m / (1 - beta1**step).",
    "correction_without_power2": "The bias correction of v uses 1 - beta2 where 1 - beta2**step belongs (beta2 "
    "to the power step): v_hat = v / (1 - beta2**step).",
    "correction_is_power1": "The bias correction of m divides by beta1**step where 1 - beta1**step belongs: "
    "m_hat = m / (1 - beta1**step).",
    "correction_is_power2": "The bias correction of v divides by beta2**step where 1 - beta2**step belongs: "
    "v_hat = v / (1 - beta2**step).",
    "no_denominator": "Your update is lr * m_hat alone (SGD with momentum): AdamW divides it by sqrt(v_hat) + eps, "
    "which gives each parameter its own step size.",
    "update_alone": "Your new param is the Adam update alone, lr * m_hat / (sqrt(v_hat) + eps): subtract it from "
    "the (decayed) param, param = param - lr * m_hat / (sqrt(v_hat) + eps).",
}


def _check_case(settings, shape, student, results, rng):
    start = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(STEPS)]
    expected = _reference(start, grads, settings)
    state = (start, np.zeros(shape), np.zeros(shape))
    for t, (grad, right) in enumerate(zip(grads, expected), 1):
        param, m, v = state
        answer = student.call(
            "function",
            name="adamw_step",
            args=(param, grad, m, v, t),
            settings=settings,
            what=f"adamw_step at step {t}",
        )
        shortcut = engine_use_line("adamw_step", answer["engine_calls"])  # the answer must be the student's NumPy
        result = answer["result"]
        if shortcut:
            return [f"step {t}: {shortcut}"]
        problem = _result_problem(result, shape)
        if problem:
            return [f"step {t}: {problem}"]
        result = tuple(np.asarray(r, dtype=np.float64) for r in result)
        if not all(_close(r, e) for r, e in zip(result, right)):
            return _diagnose(t, state, grad, settings, result, right)
        state = right  # the next step starts from the right state, so each step is judged on its own
    return []


def _reference(param, grads, settings):
    """(param, m, v) after each step of tensorlab.optim.AdamW."""
    p = Tensor(param.copy(), requires_grad=True)
    optimizer = AdamW([p], **settings)
    states = []
    for grad in grads:
        p.grad = grad.copy()
        optimizer.step()
        s = optimizer.state[p]
        states.append((p.data.copy(), s["exp_avg"].copy(), s["exp_avg_sq"].copy()))
    return states


def _result_problem(result, shape):
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        if isinstance(result, (tuple, list)):
            got = f"{len(result)} values"
        else:
            got = "one array" if isinstance(result, np.ndarray) else f"a {type(result).__name__}"
        return f"adamw_step returned {got}; return three arrays: `return param, m, v`."
    for name, r in zip(QUANTITIES, result):
        if not hasattr(r, "shape") or tuple(np.shape(r)) != shape:
            return (
                f"the {name} you returned has shape {tuple(np.shape(r))}, not the parameter's shape {shape}: "
                f"every operation in AdamW is elementwise."
            )
    return None


def _diagnose(t, state, grad, settings, result, right):
    verdicts = []
    for name, r, e in zip(QUANTITIES, result, right):
        if _close(r, e):
            verdicts.append(f"{name} is right")
        else:
            k = np.unravel_index(np.argmax(np.abs(r - e)), e.shape)
            verdicts.append(
                f"{name} is wrong (largest difference at element {tuple(int(i) for i in k)}: "
                f"yours {r[k]:.8g}, expected {e[k]:.8g})"
            )
    lines = [f"step {t} of {STEPS}: " + "; ".join(verdicts) + "."]
    order = [QUANTITIES[j] for i in range(3) for j in range(3) if _close(result[i], right[j]) and i != j]
    if len(order) >= 2:
        return lines + ["Some of what you returned matches another quantity: return them in the order (param, m, v)."]

    def fits(slips):
        with np.errstate(all="ignore"):  # some slips divide by zero or take the square root of a negative v
            return _matches(_adamw(*state, grad, t, slips=slips, **settings), result, right)

    # one slip (two, if two fit), or two slips at once: both moments' betas swapped, both returned corrected
    made = [slip for slip in SLIPS if fits((slip,))][:2] or next(filter(fits, combinations(SLIPS, 2)), ())
    if made:
        return lines + [SLIPS[slip] for slip in made]
    if not all(np.all(np.isfinite(r)) for r in result):
        return lines + [
            "Your result holds NaN or inf. Is a bias correction 1 - beta**step zero, or is "
            "something divided by sqrt(v_hat) without eps?"
        ]
    return lines + [
        "None of the usual slips fits. Compare your code with the five lines in the stub's "
        "docstring one at a time (print m_hat, v_hat and the update for one element)."
    ]


def _matches(candidate, result, right):
    """The slip reproduces the student's numbers, and differs from the right answer in this case."""
    return all(_close(r, c) for r, c in zip(result, candidate)) and not all(
        _close(c, e) for c, e in zip(candidate, right)
    )


def _adamw(param, m, v, grad, t, lr, betas, eps, weight_decay, slips=()):
    """One AdamW step with the named slips made (none: the right step), for recognising what a student did."""
    b1, b2, slips = *betas, set(slips)

    def made(table, right):  # the value of the first slip made that `table` names, else the right one
        return next((value for slip, value in table.items() if slip in slips), right)

    if "ignores_state" in slips:
        m, v = np.zeros_like(m), np.zeros_like(v)
    if "l2" in slips:
        grad = grad + weight_decay * param
    decays = dict(l2=0.0, no_decay=0.0, decay_after=0.0, decay_without_lr=weight_decay, decay_without_weight_decay=lr)
    decay = made(decays, lr * weight_decay)
    p = param * (1 - lr) * weight_decay if "decay_brackets" in slips else param - decay * param
    keep1 = made({"m_forgets": 0.0, "m_keeps_whole": 1.0}, b1)  # m = keep1 m + take1 grad
    take1 = made({"m_without_grad": 0.0, "m_grad_unweighted": 1.0}, 1 - b1)
    m = (1 - b1) * m + b1 * grad if "m_betas" in slips else keep1 * m + take1 * grad
    square = made({"v_not_squared": grad, "v_abs": np.abs(grad)}, grad * grad)
    keep2 = made({"v_forgets": 0.0, "v_keeps_whole": 1.0}, b2)  # v = keep2 v + take2 square
    take2 = made({"v_without_grad": 0.0, "v_grad_unweighted": 1.0}, 1 - b2)
    v = (1 - b2) * v + b2 * square if "v_betas" in slips else keep2 * v + take2 * square
    n = made({"step_plus_one": t + 1, "step_minus_one": t - 1}, t)
    power1 = b1 * n if {"power_as_product", "power_as_product1"} & slips else b1**n
    power2 = b2 * n if "power_as_product" in slips else (b1 if "v_correction_beta1" in slips else b2) ** n
    power1 = b1 if "correction_without_power1" in slips else power1
    power2 = b2 if "correction_without_power2" in slips else power2
    power1 = 1 - power1 if "correction_is_power1" in slips else power1  # m / b1**n: 1 - power1 is b1**n
    power2 = 1 - power2 if "correction_is_power2" in slips else power2
    if "power_of_difference" in slips:  # 1 - power = (1 - b)**n
        power1, power2 = 1 - (1 - b1) ** n, 1 - (1 - b2) ** n
    m_hat = m if {"no_bias_correction", "no_bias_correction1"} & slips else m / (1 - power1)
    v_hat = v if {"no_bias_correction", "no_bias_correction2"} & slips else v / (1 - power2)
    eps = 0.0 if "no_eps" in slips else eps
    shift = eps if "eps_outside" in slips else 0.0  # param - lr * m_hat / sqrt(v_hat) + eps
    if "eps_inside_sqrt" in slips:
        denominator = np.sqrt(v_hat + eps)
    else:
        denominator = (v_hat if "no_sqrt" in slips else np.sqrt(v_hat)) + eps - shift
    denominator = 1.0 if "no_denominator" in slips else denominator
    update = made({"update_sign": -lr, "no_lr": 1.0}, lr) * m_hat / denominator
    p = update + shift if "update_alone" in slips else p - update + shift
    if "decay_after" in slips:
        p = p - lr * weight_decay * p
    return p, m_hat if "returns_m_hat" in slips else m, v_hat if "returns_v_hat" in slips else v


def _close(a, b):
    """Equal up to rounding, as a gradient case judges: |a - b| <= RTOL (|b| + the largest |b|) everywhere (the
    solution agrees with tensorlab.optim.AdamW to 3e-16 of that); NaN and inf count as equal to themselves, so a
    slip can explain them."""
    if a.shape != b.shape:
        return False
    finite = np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore"):  # np.allclose's rule, in a third of its time (slips try
        near = np.abs(a - b) <= RTOL * (np.abs(b) + np.abs(b[finite]).max(initial=0.0))  # thousands of pairs)
    return bool(np.all((near & finite) | (a == b) | (np.isnan(a) & np.isnan(b))))


EXERCISE = Exercise(
    "adamw",
    "one AdamW step in NumPy: moments, bias correction, decoupled weight decay",
    [
        Probe(
            f"param {shape}, " + ", ".join(f"{k}={v}" for k, v in settings.items()),
            "adamw_step",
            "function",
            partial(_check_case, settings, shape),
        )
        for settings, shape in [(CASES[0], SHAPE), (CASES[1], SHAPE), (CASES[0], ())]  # a number alone: m[:] = fails
    ],
    against=f"{STEPS} steps of your adamw_step vs tensorlab.optim.AdamW (float64)",
    agrees="your adamw_step matches tensorlab.optim.AdamW",
)
