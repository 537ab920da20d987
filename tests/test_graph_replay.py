"""The HTML graph's replay of backward (tensorlab/graph/replay.py), checked against the engine's own walk.

The engine calls `tensorlab.tensor.backward_observers` once per Function, in the order it runs
them; `Walk` below is such an observer that keeps NumPy copies of every gradient. The replay's
steps, norms and heatmaps must match it. The browser tests drive the page in Debian's chromium
through playwright (both from the test extra and .ci/run); without chromium they fail, saying how
to install it.
"""

import contextlib
import html as html_module
import json
import os
import pathlib
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.functional as F
import tensorlab.graph as tg
from tensorlab.graph.labels import format_norm, node_lines
from tensorlab.tensor import backward_observers

SVG = "{http://www.w3.org/2000/svg}"
INTERNAL_ID = re.compile(r"(?<![\w.])[ftm]\d+\b|\bm:[\w.]*#\d")  # node ids: f3, t7, m5; the old m:blocks.0#3


class Walk:
    """An observer of the engine's backward walk: for each Function, NumPy copies of what went in and out."""

    def __init__(self):
        self.calls = []  # (fn, [output grads], [(input tensor, its grad or None)])
        self.where = []  # the path of the module that made each fn ("" for none); backward clears fn.scope

    def __call__(self, fn, output_grads, input_grads):
        inputs = [
            (t, None if g is None or not t.requires_grad else tl.Tensor(g).numpy().copy())
            for t, g in zip(fn.inputs, input_grads)
        ]
        self.calls.append((fn, [tl.Tensor(g).numpy().copy() for g in output_grads], inputs))
        scope = getattr(fn, "scope", ())  # set on ops made inside a module
        self.where.append(scope[-1][0] if scope else "")


@contextlib.contextmanager
def walk_and_trace(names=None):
    walk = Walk()
    backward_observers.append(walk)
    try:
        with tg.trace(names=names) as trace:
            yield walk, trace
    finally:
        backward_observers.remove(walk)


def leaf(shape, seed, requires_grad=True):
    return tl.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), requires_grad=requires_grad)


def mlp_run():
    """A small MLP with a parameter used twice and an op with three outputs: (graph, walk, trace)."""
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.standard_normal((6, 4)).astype(np.float32))
    y = tl.tensor(rng.integers(0, 3, 6))
    w1, b1, w2 = leaf((4, 12), 1), leaf((12,), 2), leaf((4, 3), 3)
    a, b, c = F.chunk(F.relu(x @ w1 + b1), 3, axis=-1)  # three (6, 4) outputs
    logits = (a * b + c) @ w2 + (a @ w2) * 0.5  # w2 and a used twice
    loss = F.cross_entropy(logits, y)
    names = {"x": x, "w1": w1, "b1": b1, "w2": w2}
    graph = tg.capture(loss, names=names)
    with walk_and_trace(names) as (walk, trace):
        loss.backward()
    return graph, walk, trace


def model_run(pos_encoding="rope", n_layers=1):
    """A TinyTransformerLM and its loss: (model, graph, walk, trace)."""
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM

    config = ModelConfig(
        vocab_size=50, context_len=16, d_model=32, n_layers=n_layers, n_heads=4, d_ff=64, pos_encoding=pos_encoding
    )
    model = TinyTransformerLM(config)
    ids = np.random.default_rng(0).integers(0, 50, (2, 8))
    with tg.record():  # the ops remember their modules: the page draws a box per module call
        _, loss = model(ids, ids)
    names = dict(model.named_parameters())
    graph = tg.capture(loss, names=names)
    with walk_and_trace(names) as (walk, trace):
        loss.backward()
    return model, graph, walk, trace


def replay_json(html):
    return json.loads(re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', html, re.S)[1])


def op_node_of(graph):
    """{id(Function): the id of its op node}."""
    return {id(node.fn()): node.id for node in graph.ops()}


def tensor_node_of(graph, t):
    """The id of the node drawn for tensor `t`: a parameter by identity, an intermediate by its creator."""
    for node in graph.tensors():
        if t.creator is None and node.leaf is t:
            return node.id
        if t.creator is not None and node.creator is not None:
            if node.creator() is t.creator and node.output_index == t.output_index:
                return node.id
    return None


def check_heatmap(heat, grad):
    """The heatmap shows evenly spaced rows and columns of `grad` as a matrix, to 1/99 of its largest value."""
    matrix = grad.reshape(1, -1) if grad.ndim < 2 else grad.reshape(-1, grad.shape[-1])
    assert heat["shape"] == list(grad.shape) and heat["matrix"] == list(matrix.shape)
    for picks, n in ((heat["rows"], matrix.shape[0]), (heat["cols"], matrix.shape[1])):
        assert len(picks) == min(n, 8) and picks[0] == 0 and picks[-1] == n - 1
        gaps = np.diff(picks)
        assert n == 1 or (gaps.min() >= 1 and gaps.max() - gaps.min() <= 1), picks  # evenly spaced
    shown = matrix[np.ix_(heat["rows"], heat["cols"])].astype(np.float64)
    assert heat["scale"] == pytest.approx(np.abs(shown).max(), rel=1e-6)
    np.testing.assert_allclose(np.array(heat["levels"]) * heat["scale"] / 99, shown, rtol=0, atol=heat["scale"] / 198)


def check_grad(entry, grad):
    expected = np.linalg.norm(grad.astype(np.float64))
    assert entry["norm"] == pytest.approx(expected, rel=1e-6)
    assert entry["text"] == format_norm(entry["norm"])
    check_heatmap(entry["heat"], grad)


# ----- the data the page carries -------------------------------------------------------------------
@pytest.mark.parametrize("run", ["mlp", "model"])
def test_replay_data_is_the_engines_walk_with_its_norms_and_values(run):
    graph, walk, trace = mlp_run() if run == "mlp" else model_run()[1:]
    steps = replay_json(graph.to_html(trace=trace))["steps"]
    op_of = op_node_of(graph)
    assert [s["op"] for s in steps] == [op_of[id(fn)] for fn, _, _ in walk.calls]  # the engine's order
    assert len(steps) == len(graph.ops()) and len({s["op"] for s in steps}) == len(steps)
    for step, (fn, output_grads, inputs), where in zip(steps, walk.calls, walk.where):
        op = graph.by_id[step["op"]]
        assert op.label == type(fn).__name__ and step["name"].startswith(op.label)
        assert step["where"] == where
        assert len(step["received"]) == len(output_grads)
        for i, (entry, grad) in enumerate(zip(step["received"], output_grads)):
            check_grad(entry, grad)
            node = graph.by_id[entry["node"]] if entry["node"] else None
            assert node is None or (node.creator() is fn and node.output_index == i)
        took_grad = [(t, g) for t, g in inputs if g is not None]
        assert len(step["sent"]) == len(took_grad)
        for entry, (t, grad) in zip(step["sent"], took_grad):
            check_grad(entry, grad)
            assert entry["node"] == tensor_node_of(graph, t)
    names = {e["name"] for s in steps for e in s["sent"]}
    if run == "mlp":
        assert {"w1 (leaf)", "b1 (leaf)", "w2 (leaf)"} <= names
        split = next(s for s in steps if s["name"].startswith("Split"))
        assert len(split["received"]) == 3 and len({e["node"] for e in split["received"]}) == 3


def test_the_replay_reads_gradients_on_any_device(backend):
    rng = np.random.default_rng(0)
    a = tl.tensor(rng.standard_normal((5, 11, 3)).astype(np.float32), requires_grad=True, device=backend.device)
    b = tl.tensor(rng.standard_normal(3).astype(np.float32), requires_grad=True, device=backend.device)
    loss = ((a + b) * (a - 1.0)).sum()
    graph = tg.capture(loss, names={"a": a, "b": b})
    with walk_and_trace() as (walk, trace):
        loss.backward()
    steps = replay_json(graph.to_html(trace=trace))["steps"]
    assert [s["name"] for s in steps] == [type(fn).__name__ for fn, _, _ in walk.calls] == ["Sum", "Mul", "Add", "Sub"]
    for step, (_, output_grads, inputs) in zip(steps, walk.calls):
        check_grad(step["received"][0], output_grads[0])
        for entry, (_, grad) in zip(step["sent"], [(t, g) for t, g in inputs if g is not None]):
            check_grad(entry, grad)
    heat = steps[2]["sent"][0]["heat"]  # a's gradient from Add: 8 of its 55 rows, its 3 columns
    assert (heat["matrix"], len(heat["rows"]), heat["cols"]) == ([55, 3], 8, [0, 1, 2])


def test_a_page_without_a_trace_has_no_replay_and_other_graphs_steps_are_left_out():
    graph, walk, trace = mlp_run()
    assert "replay-data" not in graph.to_html() and "replay-bar" not in graph.to_html()
    other = (leaf((3,), 9) * 2.0).sum()
    with tg.trace() as both:
        other.backward()
    both.steps = trace.steps[:2] + both.steps + trace.steps[2:]  # a trace that also saw another backward
    steps = replay_json(graph.to_html(trace=both))["steps"]
    op_of = op_node_of(graph)
    assert [s["op"] for s in steps] == [op_of[id(fn)] for fn, _, _ in walk.calls]


def test_a_non_finite_gradient_travels_as_text_and_its_cells_as_null():
    x = leaf((2, 3), 0)
    loss = (F.sqrt(x * 0.0) * 1.0).sum()  # d sqrt(0) = inf, times 0: NaN
    graph = tg.capture(loss, names={"x": x})
    with tg.trace() as trace, np.errstate(divide="ignore", invalid="ignore"):
        loss.backward()
    html = graph.to_html(trace=trace)
    steps = replay_json(html)["steps"]  # json.loads refuses NaN unless it is text: the browser's JSON.parse too
    assert "NaN" not in html.split('id="replay-data">', 1)[1].split("</script>", 1)[0]
    sent = steps[-1]["sent"][0]
    assert sent["norm"] == "nan" and sent["heat"]["levels"] == [[None] * 3] * 2


# ----- what the reader sees -----------------------------------------------------------------------
def svg_views(html):
    """{view path: the SVG root} of a page with modules."""
    views = re.findall(r'<div class="view" data-view="([^"]*)"[^>]*>.*?(<svg.*?</svg>)', html, re.S)
    return {path: ET.fromstring(svg) for path, svg in views}


def reader_texts(html):
    """Every text a reader can see: the SVGs' <text> and hover <title>s, the page's visible text, the JSON's names."""
    body = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    texts = [html_module.unescape(t) for t in re.findall(r">([^<]+)<", body) if t.strip()]
    texts += [html_module.unescape(attr) for attr in re.findall(r'title="([^"]*)"', body)]
    if "replay-data" in html:
        steps = replay_json(html)["steps"]
        texts += [s["name"] for s in steps] + [s["where"] for s in steps]
        texts += [e["name"] for s in steps for e in s["received"] + s["sent"]]
    return texts


def test_no_internal_id_reaches_the_reader():
    _, graph, _, trace = model_run(n_layers=2)
    html = graph.to_html(trace=trace)
    assert not re.search(r"m:[\w.]*#\d", html)  # nowhere in the page, not even in an attribute
    texts = reader_texts(html)
    assert len(texts) > 1000 and any("blocks.1.attn" in t for t in texts)
    leaked = [t for t in texts if INTERNAL_ID.search(t)]
    assert leaked == []
    arrows = [t for t in texts if " -> " in t]
    assert "blocks.0 -> blocks.1: (2, 8, 32) float32, grad " in " ".join(arrows)


def test_the_page_loads_nothing_from_elsewhere():
    graph, _, trace = mlp_run()
    html = graph.to_html(trace=trace)
    assert "<script>" in html and 'id="replay-data"' in html
    assert re.findall(r"<(?:script|link|img|iframe)[^>]*(?:src|href)=", html) == []
    assert re.findall(r"https?://(?!www\.w3\.org/2000/svg\b)", html) == []  # the SVG namespace names, loads nothing


def test_constants_are_labelled_constants_and_the_users_data_inputs():
    _, graph, _, trace = model_run()
    first_lines = {node_lines(n)[0]: n.role for n in graph.tensors() if n.role in ("input", "constant")}
    assert first_lines == {"RoPE cos (constant)": "constant", "RoPE sin (constant)": "constant", "input": "input"}
    assert sorted(n.shape for n in graph.tensors() if n.role == "input") == [(2, 8), (2, 8)]  # ids and targets
    html = graph.to_html(trace=trace)
    texts = reader_texts(html)
    assert "RoPE cos (constant)" in texts and "RoPE sin (constant)" in texts
    assert any(t.startswith("RoPE cos: constant (made by the code), no grad") for t in texts)
    inputs = [t for t in texts if t.startswith("tensor: input (data passed in)")]
    assert len(inputs) >= 2 and all("(2, 8), 16 elements, int64" in t for t in inputs)

    attention = tl.nn.CausalSelfAttention(tl.nn.TransformerConfig(d_model=8, n_heads=2, n_layers=1), fused=False)
    x = leaf((1, 4, 8), 5, requires_grad=False)
    composed = tg.capture(attention(x).sum())
    roles = {node_lines(n)[0]: n.role for n in composed.tensors() if n.role in ("input", "constant")}
    assert roles == {
        "causal mask (constant)": "constant",
        "RoPE cos (constant)": "constant",
        "RoPE sin (constant)": "constant",
        "0.5": "constant",  # the 1/sqrt(D) scale, a Python number in the expression
        "input": "input",  # x
    }

    _, sinusoidal, _, _ = model_run("sinusoidal")
    assert {node_lines(n)[0] for n in sinusoidal.tensors() if n.role == "constant"} == {"sinusoids (constant)"}


def test_arrows_between_blocks_show_the_norm_of_their_gradient():
    _, graph, walk, trace = model_run(n_layers=2)
    arrived = {}  # (creator, output index) -> the norm of the gradient that reached that output
    for fn, output_grads, _ in walk.calls:
        for i, grad in enumerate(output_grads):
            arrived[id(fn), i] = np.linalg.norm(grad.astype(np.float64))
    view = graph.collapsed(1)
    between = [
        e for e in view.edges if e.tensor is not None and "module" in (view.by_id[e.src].kind, view.by_id[e.dst].kind)
    ]
    expected = {(e.src, e.tensor.id): arrived[id(e.tensor.creator()), e.tensor.output_index] for e in between}
    ends = {(view.by_id[e.src].label, view.by_id[e.dst].label) for e in between}
    assert ends == {("tok_emb", "blocks.0"), ("blocks.0", "blocks.1"), ("blocks.1", "norm"), ("norm", "Linear")}
    overview = svg_views(graph.to_html(trace=trace))[""]
    labels = [t.text for t in overview.iter(SVG + "text") if t.get("class") == "edge-grad"]
    assert len(labels) == len(expected)
    assert sorted(float(t.split()[1]) for t in labels) == pytest.approx(sorted(expected.values()), rel=5e-4)
    titles = [p.find(SVG + "title").text for p in overview.iter(SVG + "path") if p.get("data-tensor")]
    block_to_block = [t for t in titles if t.startswith("blocks.0 -> blocks.1")]
    assert len(block_to_block) == 1
    norm = float(block_to_block[0].rsplit("grad ", 1)[1])
    edge = next(e for e in between if (view.by_id[e.src].label, view.by_id[e.dst].label) == ("blocks.0", "blocks.1"))
    assert norm == pytest.approx(expected[edge.src, edge.tensor.id], rel=5e-4)
    bare = svg_views(graph.to_html())[""]
    assert [t for t in bare.iter(SVG + "text") if t.get("class") == "edge-grad"] == []


# ----- in a real browser --------------------------------------------------------------------------
# Debian's and Ubuntu's names, then Google Chrome's (playwright drives any Chromium build); TENSORLAB_CHROMIUM first
CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MACOS_CHROME = "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"


def find_chromium():
    named = os.environ.get("TENSORLAB_CHROMIUM")
    if named:
        return named
    found = next((path for path in map(shutil.which, CHROMIUM) if path), None)
    return found or (MACOS_CHROME if os.path.isfile(MACOS_CHROME) else None)


@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None or not os.path.isfile(executable):
        pytest.fail(
            "the graph replay test drives a real browser and found no chromium or Chrome: install it "
            "(`sudo apt-get install chromium` on Debian and Ubuntu; .ci/run does it) or set TENSORLAB_CHROMIUM=PATH",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the graph replay test needs playwright: pip install -e '.[test]'", pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable)
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser, tmp_path):
    """Write a page and open it; returns the playwright Page. Any script error fails the test."""
    pages, errors = [], []

    def opener(graph, trace):
        path = graph.render(tmp_path / f"graph{len(pages)}.html", trace=trace)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.set_default_timeout(10_000)  # a step takes milliseconds; play moves one step each 0.6 s
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(pathlib.Path(path).as_uri())
        pages.append(page)
        return page

    yield opener
    for page in pages:
        page.close()
    assert errors == []


CURRENT = """() => Array.from(document.querySelectorAll(".graph svg g.node.current"))
    .filter(el => el.getBoundingClientRect().width > 0)
    .filter(el => el.classList.contains("op") || el.classList.contains("module"))
    .map(el => el.id)"""


def current(page):
    """The op or module box lit as the current step, in the drawing on screen."""
    return page.evaluate(CURRENT)


def position(page):
    return page.inner_text("#replay-position")


def test_the_replay_walks_backward_in_the_engines_order_in_a_browser(open_page):
    graph, walk, trace = mlp_run()
    expected = [op_node_of(graph)[id(fn)] for fn, _, _ in walk.calls]
    steps = replay_json(graph.to_html(trace=trace))["steps"]
    page = open_page(graph, trace)
    n = len(expected)
    assert position(page) == f"step 0 of {n}" and current(page) == [] and page.is_hidden("#replay-panel")
    seen = []
    for k in range(n):
        page.keyboard.press("ArrowRight")
        assert position(page) == f"step {k + 1} of {n}"
        seen += current(page)
        panel = page.inner_text("#replay-panel")
        for entry in steps[k]["received"] + steps[k]["sent"]:
            assert f"|grad| = {entry['text']}" in panel
        callouts = page.eval_on_selector_all("g.callout text", "els => els.map(el => el.textContent)")
        assert callouts[0] == f"grad in {steps[k]['received'][0]['text']}"
        assert page.locator("g.callout svg.heatmap rect").count() >= len(steps[k]["received"][0]["heat"]["levels"])
    assert seen == expected  # one op lit per step, in the order the engine's observers saw
    lit = page.evaluate("() => document.querySelectorAll('.graph g.node.lit').length")
    assert lit == len([n for n in graph.nodes if n.role not in ("input", "constant")])  # every node backward reached
    page.keyboard.press("ArrowRight")  # past the end: stays
    assert position(page) == f"step {n} of {n}"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert position(page) == f"step {n - 2} of {n}" and current(page) == [expected[n - 3]]
    page.click('[data-replay="back"]')
    page.click('[data-replay="step"]')
    page.click('[data-replay="step"]')
    assert position(page) == f"step {n - 1} of {n}" and current(page) == [expected[n - 2]]
    page.keyboard.press(" ")  # play: the last step comes, then it stops
    page.wait_for_function(f"() => document.getElementById('replay-position').textContent === 'step {n} of {n}'")
    page.wait_for_function("() => document.querySelector('[data-replay=\"play\"]').textContent === 'play'")
    page.keyboard.press(" ")  # at the end, play starts over
    page.wait_for_function("() => document.getElementById('replay-position').textContent.startsWith('step 1 ')")
    page.keyboard.press(" ")  # and pauses
    stopped = position(page)
    page.wait_for_timeout(1500)
    assert position(page) == stopped and stopped in (f"step 1 of {n}", f"step 2 of {n}")
    for _ in range(n):
        page.keyboard.press("ArrowLeft")
    assert position(page) == f"step 0 of {n}" and current(page) == [] and page.is_hidden("#replay-panel")


def test_the_replay_lights_module_boxes_and_opened_modules_in_a_browser(open_page):
    _, graph, walk, trace = model_run()
    order = [op_node_of(graph)[id(fn)] for fn, _, _ in walk.calls]
    view = graph.collapsed(1)
    shown = {member: box.id for box in view.modules() for member in box.members}
    boxes_order = [shown.get(op, op) for op in order]
    page = open_page(graph, trace)
    seen = []
    for _ in order:
        page.keyboard.press("ArrowRight")
        seen += current(page)
    assert seen == boxes_order and len(set(seen)) < len(seen)  # a box stays lit for each of its ops
    assert {view.by_id[b].label for b in seen if b in view.by_id and view.by_id[b].kind == "module"} >= {
        "blocks.0",
        "norm",
        "tok_emb",
    }
    arrows = page.evaluate("() => document.querySelectorAll('.view:not([hidden]) path.edge.lit').length")
    assert arrows == len([e for e in view.edges if e.tensor is not None])  # every arrow carried a gradient back
    page.click(
        '.view:not([hidden]) a[data-path="*"]'
    )  # everything: the ops themselves, the current one lit as it is opened
    assert current(page) == [order[-1]]
    for k in range(len(order) - 1, 0, -1):
        page.keyboard.press("ArrowLeft")
        assert current(page) == [order[k - 1]]
