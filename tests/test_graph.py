"""tensorlab.graph: capture the graph, draw it (SVG, HTML, DOT), and trace a backward pass."""

import os
import re
import stat
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.functional as F
import tensorlab.graph as tg
import tensorlab.graph.svg
from tensorlab.graph import dot as dot_module
from tensorlab.tensor import backward_observers, topological_order

SVG = "{http://www.w3.org/2000/svg}"


def leaf(shape, seed=0, requires_grad=True, device="cpu"):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return tl.tensor(data, requires_grad=requires_grad, device=device)


def broadcast_example(device="cpu"):
    """loss = sum((a + b) * 2) with a (4, 5, 3) and b (3,): 3 ops, 6 tensors (the 2 is a constant)."""
    a, b = leaf((4, 5, 3), 0, device=device), leaf((3,), 1, device=device)
    return a, b, ((a + b) * 2.0).sum()


def svg_nodes(svg_text):
    """{node id: (classes, [text lines], title)} from an SVG string; it must parse as XML."""
    root = ET.fromstring(svg_text)
    assert root.tag == SVG + "svg"
    nodes = {}
    for g in root.iter(SVG + "g"):
        classes = g.get("class", "").split()
        if "node" in classes:
            texts = [t.text for t in g.findall(SVG + "text")]
            nodes[g.get("id")] = (classes, texts, g.find(SVG + "title").text)
    return nodes


def mlp(seed=0):
    """A 2-layer MLP on a batch of 8: softmax probabilities and a cross-entropy loss."""
    rng = np.random.default_rng(seed)
    x = tl.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = tl.tensor(rng.integers(0, 3, 8))
    params = {"W1": leaf((4, 16), 1), "b1": leaf((16,), 2), "W2": leaf((16, 3), 3), "b2": leaf((3,), 4)}
    h = F.relu(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    probs = F.softmax(logits)
    loss = F.cross_entropy(logits, y) + 0.1 * (probs * probs).mean()
    return params, logits, loss


# ----- capture --------------------------------------------------------------------------------
def test_capture_has_one_node_per_op_and_tensor_with_depths():
    a, b, loss = broadcast_example()
    g = tg.capture(loss, names={a: "a", b: "b"})
    assert [n.label for n in g.ops()] == ["Sum", "Mul", "Add"]  # output's creator first
    assert len(g.tensors()) == 6
    roles = sorted(n.role for n in g.tensors())
    assert roles == ["constant", "intermediate", "intermediate", "output", "param", "param"]
    by_label = {n.label: n for n in g.tensors() if n.label}
    assert by_label["a"].shape == (4, 5, 3) and by_label["b"].shape == (3,)
    assert by_label["a"].dtype == "float32"
    # depth = longest path to the output: loss 0, Sum 1, Mul's output 2, Mul 3, a + b 4, Add 5, a and b 6
    assert by_label["a"].depth == by_label["b"].depth == 6
    assert all(g.by_id[e.src].depth > g.by_id[e.dst].depth for e in g.edges)
    assert repr(g) == "Graph(3 ops, 6 tensors, 2 parameters)"


def test_capture_after_backward_says_to_capture_first():
    _, _, loss = broadcast_example()
    loss.backward()
    with pytest.raises(RuntimeError, match="capture\\(\\) before backward"):
        tg.capture(loss)


def test_capture_after_backward_with_retain_graph_works():
    a, _, loss = broadcast_example()
    loss.backward(retain_graph=True)
    g = tg.capture(loss)
    assert len(g.ops()) == 3


def test_names_in_every_accepted_form():
    a, b = leaf((2, 3), 0), leaf((3,), 1)
    c = leaf((2, 3), 2)
    c.name = "from_attribute"
    out = (a * b + c).sum()
    for names in (
        {a: "alpha", b: "beta"},
        {"alpha": a, "beta": b},
        [("alpha", a), ("beta", b)],
        {id(a): "alpha", id(b): "beta"},
    ):
        labels = {n.label for n in tg.capture(out, names=names).tensors()}
        assert {"alpha", "beta", "from_attribute"} <= labels, names


def test_op_settings_and_constant_values_are_shown():
    x = leaf((3, 4))
    out = (x.sum(axis=1) ** 2).mean()
    texts = [line for _, lines, _ in svg_nodes(tg.capture(out).to_svg()).values() for line in lines]
    assert "axis=1" in texts and "exponent=2" in texts
    assert "Mean" in texts  # default settings are not shown: no "axis=None" line
    assert not any("None" in t for t in texts)
    scaled = x * 0.5
    constant = [n for n in tg.capture(scaled).tensors() if n.role == "constant"]
    assert len(constant) == 1 and constant[0].value == "0.5"


def test_capture_several_outputs_and_a_lone_leaf():
    _, logits, loss = mlp()
    g = tg.capture([logits, loss])
    assert sum(n.role == "output" for n in g.nodes) == 2
    # loss sits at the bottom; logits feeds later ops, so it sits above them (edges point down)
    logits_node, loss_node = g.nodes[0], g.nodes[1]
    assert loss_node.depth == 0 and logits_node.depth > 0
    assert sorted(g.by_id[e.dst].label for e in g.edges if e.src == logits_node.id) == ["CrossEntropy", "Softmax"]
    assert all(g.by_id[e.src].depth > g.by_id[e.dst].depth for e in g.edges)
    alone = tg.capture(leaf((2,)))
    assert [n.role for n in alone.nodes] == ["param"] and alone.edges == []
    ET.fromstring(alone.to_svg())


# ----- SVG and HTML ---------------------------------------------------------------------------
def test_svg_has_a_node_per_op_and_tensor_with_op_names_and_shapes():
    a, b, loss = broadcast_example()
    g = tg.capture(loss, names={a: "a", b: "b"})
    nodes = svg_nodes(g.to_svg())
    ops = {i: lines for i, (classes, lines, _) in nodes.items() if "op" in classes}
    tensors = {i: lines for i, (classes, lines, _) in nodes.items() if "tensor" in classes}
    assert sorted(lines[0] for lines in ops.values()) == ["Add", "Mul", "Sum"]
    assert len(tensors) == 6
    shapes = sorted(line for lines in tensors.values() for line in lines if line.endswith("float32"))
    assert shapes == sorted(
        ["(4, 5, 3) float32", "(3,) float32", "(4, 5, 3) float32", "() float32", "(4, 5, 3) float32", "() float32"]
    )
    assert nodes[g.params()[0].id][1][0] in ("a", "b")
    # one path (an arrow) per edge, each with an arrow head
    root = ET.fromstring(g.to_svg())
    paths = [p for p in root.iter(SVG + "path") if p.get("class") == "edge"]
    assert len(paths) == len(g.edges) == 8
    assert all(p.get("marker-end") == "url(#arrow)" for p in paths)


def test_grad_norms_appear_on_the_leaves_after_backward(backend):
    a, b, loss = broadcast_example(backend.device)
    g = tg.capture(loss, names={a: "a", b: "b"})
    before = svg_nodes(g.to_svg())
    assert not any(line.startswith("grad") for _, lines, _ in before.values() for line in lines)
    loss.backward()
    after = svg_nodes(g.to_svg())
    for t, name in ((a, "a"), (b, "b")):
        node = next(n for n in g.params() if n.label == name)
        expected = f"grad {np.linalg.norm(tl.Tensor(t.grad).numpy()):.4g}"
        assert after[node.id][1][-1] == expected
        assert expected.replace("grad ", "|grad| = ") in after[node.id][2]  # the hover title
    assert "(4, 5, 3)" in after[next(n.id for n in g.params() if n.label == "a")][1][1]


def test_trace_puts_grad_norms_on_intermediates_too():
    a, b, loss = broadcast_example()
    g = tg.capture(loss)
    with tg.trace() as t:
        loss.backward()
    norms = g.grad_norms(t)
    s = next(
        n
        for n in g.tensors()
        if n.role == "intermediate"
        and n.shape == (4, 5, 3)
        and g.by_id[next(e.dst for e in g.edges if e.src == n.id)].label == "Mul"
    )
    # d loss / d (a + b) = 2 everywhere
    assert norms[s.id] == pytest.approx(np.linalg.norm(np.full((4, 5, 3), 2.0)))
    out = next(n for n in g.nodes if n.role == "output")
    assert norms[out.id] == 1.0
    assert f"grad {norms[s.id]:.4g}" in svg_nodes(g.to_svg(trace=t))[s.id][1]


def test_nodes_in_a_row_do_not_overlap_and_stay_inside_the_picture():
    _, _, loss = mlp()
    root = ET.fromstring(tg.capture(loss).to_svg())
    width, height = float(root.get("width")), float(root.get("height"))
    rects = []
    for g in root.iter(SVG + "g"):
        if "node" in g.get("class", "").split():
            r = g.find(SVG + "rect")
            rects.append(tuple(float(r.get(k)) for k in ("x", "y", "width", "height")))
    for i, (x1, y1, w1, h1) in enumerate(rects):
        assert 0 <= x1 and x1 + w1 <= width and 0 <= y1 and y1 + h1 <= height
        for x2, y2, w2, h2 in rects[i + 1 :]:
            overlap_x = x1 < x2 + w2 and x2 < x1 + w1
            overlap_y = y1 < y2 + h2 and y2 < y1 + h1
            assert not (overlap_x and overlap_y)


def test_mlp_with_softmax_and_cross_entropy_renders_in_every_format(tmp_path):
    params, logits, loss = mlp()
    g = tg.capture(loss, names=params)
    with tg.trace(names=params) as t:
        loss.backward()
    paths = [g.render(tmp_path / f"mlp.{ext}", trace=t) for ext in ("svg", "html", "dot")]
    nodes = svg_nodes(open(paths[0]).read())
    assert len(nodes) == len(g.nodes)
    texts = [line for _, lines, _ in nodes.values() for line in lines]
    for op in ("MatMul", "Relu", "Softmax", "CrossEntropy", "Add", "Mul", "Mean"):
        assert op in texts
    for name, p in params.items():
        node = next(n for n in g.params() if n.label == name)
        assert nodes[node.id][1] == [name, f"{p.shape} float32", f"grad {np.linalg.norm(p.grad):.4g}"]
    html = open(paths[1]).read()
    assert html.startswith("<!DOCTYPE html>") and "legend" in html and "parameter" in html
    svg_part = html[html.index("<svg") : html.index("</svg>") + len("</svg>")]
    assert len(svg_nodes(svg_part)) == len(g.nodes)
    assert open(paths[2]).read() == g.to_dot(trace=t)
    assert g._repr_svg_().startswith("<svg")


def test_a_hundred_node_graph_stays_well_formed():
    x = leaf((3, 8), 0, requires_grad=False)
    h = x
    weights = [leaf((8, 8), i + 1) for i in range(18)]
    for i, w in enumerate(weights):
        z = F.tanh(h @ w)
        h = z + h if i % 3 == 2 else z  # residual connections: edges that skip rows
    loss = F.cross_entropy(h, tl.tensor(np.arange(3)))
    g = tg.capture(loss, names={w: f"layers.{i}.weight" for i, w in enumerate(weights)})
    assert len(g.nodes) >= 100
    nodes = svg_nodes(g.to_svg())
    assert len(nodes) == len(g.nodes)
    assert len(re.findall(r"->", g.to_dot())) == len(g.edges)


def test_names_are_escaped_in_svg_and_dot():
    a = leaf((2,))
    g = tg.capture((a * a).sum(), names={a: 'x<1> & "y"'})
    nodes = svg_nodes(g.to_svg())
    assert 'x<1> & "y"' in [lines[0] for _, lines, _ in nodes.values()]
    assert 'label="x<1> & \\"y\\"\\n' in g.to_dot()


# ----- DOT and the render() entry point -----------------------------------------------------
def test_dot_has_one_statement_per_node_and_per_edge():
    a, b, loss = broadcast_example()
    text = tg.capture(loss).to_dot()
    assert text.startswith("digraph tensorlab {") and text.rstrip().endswith("}")
    node_lines = [line for line in text.splitlines() if re.match(r"\s+[tf]\d+ \[", line)]
    edge_lines = [line for line in text.splitlines() if re.match(r"\s+[tf]\d+ -> [tf]\d+", line)]
    assert len(node_lines) == 9
    assert len(edge_lines) == 8
    assert sum('label="Add"' in line for line in node_lines) == 1
    assert sum('[label="a"]' in line for line in edge_lines) == 2  # Add and Mul take a and b


def test_render_picks_the_format_from_the_extension(tmp_path):
    a, b, loss = broadcast_example()
    for ext, start in (("svg", "<svg"), ("html", "<!DOCTYPE html>"), ("dot", "digraph")):
        path = tg.render(loss, tmp_path / f"graph.{ext}", names={a: "a"})
        assert open(path).read().startswith(start)
    with pytest.raises(ValueError, match=r"\.svg, \.html or \.dot"):
        tg.render(loss, tmp_path / "graph.jpeg")


def test_png_without_graphviz_says_what_to_do(tmp_path, monkeypatch):
    _, _, loss = broadcast_example()
    monkeypatch.setattr(dot_module.shutil, "which", lambda name: None)
    for ext in ("png", "pdf"):
        with pytest.raises(tg.GraphvizNotFoundError) as error:
            tg.render(loss, tmp_path / f"graph.{ext}")
        message = str(error.value)
        assert "Graphviz" in message and "install" in message.lower() and ".svg" in message and ".html" in message
        assert not (tmp_path / f"graph.{ext}").exists()


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as a stand-in for dot")
def test_png_runs_dot_when_it_is_installed(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n# dot -Tpng -o PATH < graph.dot: keep the input to check it\ncat > "$3"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    _, _, loss = broadcast_example()
    out = tg.render(loss, tmp_path / "graph.png")
    assert open(out).read() == tg.capture(loss).to_dot()


# ----- trace ------------------------------------------------------------------------------------
def test_trace_lists_functions_in_reverse_topological_order():
    params, _, loss = mlp()
    expected = list(reversed(topological_order(loss.creator)))
    with tg.trace() as t:
        loss.backward()
    assert len(t) == len(expected)
    assert all(step.fn is fn for step, fn in zip(t.steps, expected))
    assert t.steps[0].fn is loss.creator  # the output's creator runs first
    text = str(t).splitlines()
    assert text[1].lstrip().startswith("1. Add")
    assert [line.split()[1] for line in text if re.match(r"\s*\d+\. ", line)] == t.ops


def test_trace_names_the_broadcast_reduction():
    a, b, loss = broadcast_example()
    with tg.trace() as t:
        loss.backward()
    text = str(t)
    assert "Add: grad of b summed over axes (0, 1), (4, 5, 3) -> (3,)" in text
    assert t.broadcast_lines() == ["Add: grad of b summed over axes (0, 1), (4, 5, 3) -> (3,)"]
    add = next(s for s in t.steps if s.op == "Add")
    assert [i.summed_axes for i in add.inputs] == [(), (0, 1)]
    # norms: what each Function returned, and what reached the leaves
    assert add.inputs[1].norm == pytest.approx(np.linalg.norm(b.grad), rel=1e-6)
    assert add.inputs[0].norm == pytest.approx(np.linalg.norm(a.grad), rel=1e-6)
    assert f"{np.linalg.norm(b.grad):.4g}" in text


def test_a_trace_left_at_the_end_of_a_notebook_cell_shows_the_trace():
    """IPython displays a cell's last value with its pretty printer: the trace as print(t) shows it, broadcast
    reduction included; repr() stays one line (a debugger's variable pane, a list's repr)."""
    pretty = pytest.importorskip("IPython.lib.pretty").pretty
    _, _, loss = broadcast_example()
    with tg.trace() as t:
        loss.backward()
    shown = pretty(t)
    assert shown == str(t) and shown.startswith("backward trace: 3 Functions, in the order backward ran them\n")
    assert "Add: grad of b summed over axes (0, 1), (4, 5, 3) -> (3,)" in shown
    assert repr(t) == "<Trace of 3 backward steps>" and repr([t]) == "[<Trace of 3 backward steps>]"
    with tg.trace() as empty:
        pass
    assert pretty(empty) == "backward trace: no Function ran (was backward() called inside the block?)"


def test_trace_uses_the_users_names_and_sees_size_one_axes():
    x, bias = leaf((2, 3, 4)), leaf((3, 1))
    loss = (x * bias).sum()
    with tg.trace(names={bias: "scale"}) as t:
        loss.backward()
    assert t.broadcast_lines() == ["Mul: grad of scale summed over axes (0, 2), (2, 3, 4) -> (3, 1)"]


def test_trace_names_matmul_batch_axes_and_linear_bias():
    x, w = leaf((2, 4, 3), requires_grad=False), leaf((3, 5))
    with tg.trace(names={w: "W"}) as t:
        (x @ w).sum().backward()
    assert t.broadcast_lines() == ["MatMul: grad of W summed over batch axes (0,), (2, 3, 5) -> (3, 5)"]
    weight, bias = leaf((5, 3)), leaf((5,))
    with tg.trace() as t:
        F.linear(x, weight, bias).sum().backward()
    assert any(line.endswith("summed over axes (0, 1), (2, 4, 5) -> (5,)") for line in t.broadcast_lines())


def test_trace_does_not_call_shape_changes_broadcasts():
    p, q = leaf((3,), 0), leaf((3,), 1)
    out = (F.stack([p, q]).sum(axis=0, keepdims=True).reshape(3) * 1.0 + p.reshape(1, 3)).sum()
    with tg.trace() as t:
        out.backward()
    assert t.broadcast_lines() == []


def test_trace_stops_observing_after_the_block_even_on_error():
    _, _, loss = broadcast_example()
    with pytest.raises(ZeroDivisionError):
        with tg.trace() as t:
            raise ZeroDivisionError
    assert t not in backward_observers and backward_observers == []
    with tg.trace() as t:
        pass
    loss.backward()
    assert len(t) == 0 and "no Function ran" in str(t)


def test_long_steps_list_one_input_per_line():
    names = {leaf((4,), i): f"a_rather_long_parameter_name_number_{i}" for i in range(3)}
    a, b, c = names
    with tg.trace(names=names) as t:
        (a * b + c).sum().backward()
    lines = str(t).splitlines()
    assert all(len(line) <= 120 for line in lines)
    assert any(line.strip().startswith("-> a_rather_long_parameter_name_number_") for line in lines)


def test_trace_values_prints_small_gradients_and_skips_large_ones():
    a, b = tl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), tl.tensor([0.5, -1.0], requires_grad=True)
    big = leaf((5, 4))
    loss = F.tanh(a * b).sum() + (big * big).sum()
    with tg.trace(names={a: "a", b: "b", big: "big"}, values=True) as t:
        loss.backward()
    text = str(t)
    # d/da tanh(a b) = (1 - tanh^2(a b)) b, and d/db the same times a, summed over rows
    expected_a = (1 - np.tanh(a.data * b.data) ** 2) * b.data
    shown = next(s for s in t.steps if s.op == "Mul" and s.inputs[0].name == "a").inputs[0].values
    np.testing.assert_allclose(shown, expected_a, rtol=1e-6, atol=1e-6)  # 1 - tanh^2 near 1 keeps tanh's abs error
    expected_b = (expected_a / b.data * a.data).sum(axis=0)
    shown_a = "-> a = " + np.array2string(expected_a, precision=4, separator=", ", prefix="-> a = ")
    assert shown_a.splitlines()[0] in text and "-> b = [{:.4f}, {:.4f}]".format(*expected_b) in text
    assert "-> big =" not in text  # 20 elements: more than tg.tracer.SMALL, norm only
    with tg.trace() as quiet:
        F.tanh(a * b).sum().backward()
    assert "=" not in str(quiet).split("\n", 1)[1]  # without values=True: norms only


# ----- modules: grouping, depth, the HTML view --------------------------------------------------
def four_layer_model():
    """The issue's example: a 4-layer TinyTransformerLM (dropout on) and its loss; 97 ops, 254 nodes."""
    from models.config import ModelConfig
    from models.transformer import TinyTransformerLM

    config = ModelConfig(vocab_size=50, context_len=16, d_model=32, n_layers=4, n_heads=4, d_ff=64, dropout=0.1)
    model = TinyTransformerLM(config)
    ids = np.random.default_rng(0).integers(0, 50, (2, 8))
    with tg.record():
        _, loss = model(ids, ids)
    return model, tg.capture(loss, names=dict(model.named_parameters()))


def svg_size(svg_text):
    root = ET.fromstring(svg_text)
    return float(root.get("width")), float(root.get("height"))


def test_ops_remember_the_modules_that_made_them():
    from tensorlab.graph.scopes import module_stack as module_scope

    model, g = four_layer_model()
    scopes = {op.label: op.scope for op in reversed(g.ops())}  # the last block's ops win
    assert [path for path, _, _ in scopes["CausalAttention"]] == ["", "blocks.3", "blocks.3.attn"]
    assert [cls for _, cls, _ in scopes["CausalAttention"]] == [
        "TinyTransformerLM",
        "TransformerBlock",
        "CausalSelfAttention",
    ]
    assert [path for path, _, _ in scopes["Gelu"]] == ["", "blocks.3", "blocks.3.ffn"]
    assert [path for path, _, _ in scopes["CrossEntropy"]] == [""]  # made by the model itself
    assert g.module_paths()[:3] == ["tok_emb", "emb_dropout", "blocks.0"]
    assert module_scope.entries == [] and module_scope.modules == []
    with tg.record():
        outside = (leaf((2,)) * 2.0).sum()
        with pytest.raises(ValueError):
            tl.nn.Linear(3, 2)(leaf((2, 5)))  # a shape error inside forward still pops the scope
        assert module_scope.entries == [] and module_scope.modules == []
    assert tg.capture(outside).ops()[0].scope == ()


def test_a_four_layer_model_fits_on_one_screen_at_block_depth():
    _, g = four_layer_model()
    full_width, full_height = svg_size(g.to_svg())
    assert (len(g.ops()), len(g.nodes)) == (97, 254) and full_height > 10_000  # 11,850 px measured
    view = g.collapsed(1)
    width, height = svg_size(g.to_svg(depth=1))
    # embedding, dropout, 4 blocks, norm, head, loss, the tied table, the targets: 12 nodes, 909 x 290 px
    assert len(view.nodes) <= 12 and height <= 1000 and width <= 400, (len(view.nodes), width, height)
    blocks = [n for n in view.modules() if n.label.startswith("blocks.")]
    assert [n.label for n in blocks] == ["blocks.3", "blocks.2", "blocks.1", "blocks.0"]
    assert {n.settings for n in blocks} == {"TransformerBlock, 23 ops"}
    # nothing is lost: every op is shown or inside exactly one box, every parameter too
    inside = [m for box in view.modules() for m in box.members]
    assert len(inside) == len(set(inside))
    assert sorted(n.id for n in g.ops()) == sorted(
        [m for m in inside if m.startswith("f")] + [n.id for n in view.ops()]
    )
    assert {n.id for n in g.params()} == {m for m in inside if g.by_id[m].role == "param"} | {
        n.id for n in view.params()
    }
    assert all(view.by_id[e.src].depth > view.by_id[e.dst].depth for e in view.edges)
    # the full graph keeps its own depths: a view works on copies
    assert all(g.by_id[e.src].depth > g.by_id[e.dst].depth for e in g.edges)
    deeper = g.collapsed(2)
    assert "blocks.0.attn" in [n.label for n in deeper.modules()] and len(deeper.nodes) > len(view.nodes)


def test_split_outputs_are_labelled_q_k_v():
    _, g = four_layer_model()
    split = next(n for n in g.ops() if n.label == "Split")
    produced = [g.by_id[e.dst].label for e in g.edges if e.src == split.id]
    assert produced == ["q", "k", "v"] or sorted(produced) == ["k", "q", "v"]
    attention = g.collapsed(1, expanded=["blocks.0", "blocks.0.attn"])
    split = next(n for n in attention.ops() if n.label == "Split" and n.scope[1][0] == "blocks.0")
    assert sorted(e.slot for e in attention.edges if e.src == split.id) == ["k", "q", "v"]


def test_a_module_called_twice_is_two_boxes():
    norm = tl.nn.RMSNorm(4)

    class Twice(tl.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = norm

        def forward(self, x):
            return self.norm(self.norm(x) * 2.0)

    with tg.record():
        out = Twice()(leaf((3, 4))).sum()
    view = tg.capture(out).collapsed(1)
    first, second = sorted(view.modules(), key=lambda n: -n.depth)  # the first call sits higher
    assert (first.label, second.label) == ("norm (call 1)", "norm (call 2)")
    assert [n.label for n in view.ops()] == ["Sum", "Mul"]  # the * 2.0 between them is the model's own


def test_html_opens_at_block_depth_and_every_box_opens_on_click():
    _, g = four_layer_model()
    html = g.to_html()
    views = dict(re.findall(r'<div class="view" data-view="([^"]*)"[^>]*>(.*?)</svg>', html, re.S))
    assert set(views) == {"", "*"} | set(g.module_paths())
    first = re.search(r'<div class="view" data-view="([^"]*)"( hidden)?>', html)
    assert first.groups() == ("", None)  # the overview shows first
    assert html.count('<div class="view"') == html.count(" hidden>") + 1
    assert len(svg_nodes(views[""][views[""].index("<svg") :] + "</svg>")) == 12
    for view in views.values():
        for path in re.findall(r'<g class="node module module" id="[^"]*" data-path="([^"]*)"', view):
            assert path in views  # a click on any box has a drawing to show
    block = views["blocks.1"]
    inner = svg_nodes(block[block.index("<svg") :] + "</svg>")
    labels = [lines[0] for _, lines, _ in inner.values()]
    assert "blocks.1.attn" in labels and "blocks.0" in labels and "blocks.1" not in labels
    assert 'data-path="blocks.1"' in block  # the path above the drawing leads back
    assert "<script>" in html
    # open modules are framed; a frame's name goes back to the view with it closed
    frames = re.findall(r'<g class="frame" data-path="([^"]*)"><title>([^:]*):', views["blocks.1.attn"])
    assert frames == [("", "blocks.1"), ("blocks.1", "blocks.1.attn")]
    assert re.findall(r'<g class="frame"', views[""]) == []


def test_depth_leaves_a_graph_without_modules_alone_and_reaches_the_html(tmp_path):
    _, _, loss = mlp()
    g = tg.capture(loss)
    assert g.to_svg(depth=1) == g.to_svg()  # no module: nothing to close, every tensor still drawn
    with pytest.raises(ValueError, match="depth must be 1 or more"):
        g.collapsed(0)
    _, model_graph = four_layer_model()
    page = open(model_graph.render(tmp_path / "m.html", depth=2)).read()
    overview = page[page.index('data-view=""') :]
    overview = overview[overview.index("<svg") : overview.index("</svg>") + 6]
    assert len(svg_nodes(overview)) == len(model_graph.collapsed(2).nodes) == 34


def test_graph_modules_import_in_any_order_and_in_no_circle():
    import ast
    import subprocess
    import sys
    from pathlib import Path

    package = Path(tg.__file__).parent
    modules = sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
    imports = {}
    for name in modules:
        tree = ast.parse((package / f"{name}.py").read_text())
        found = set()
        for node in ast.walk(tree):  # imports inside functions count too
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tensorlab.graph"):
                found |= (
                    {node.module.rsplit(".", 1)[-1]}
                    if node.module != "tensorlab.graph"
                    else {a.name for a in node.names}
                )
            elif isinstance(node, ast.Import):
                found |= {a.name.rsplit(".", 1)[-1] for a in node.names if a.name.startswith("tensorlab.graph.")}
        imports[name] = found & set(modules)
    state = {}

    def visit(name, path):
        assert state.get(name) != "open", "import circle: " + " -> ".join(path + [name])
        if name not in state:
            state[name] = "open"
            for other in sorted(imports[name]):
                visit(other, path + [name])
            state[name] = "done"

    for name in modules:
        visit(name, [])
    assert imports["snapshot"] == set() and imports["layout"] == set()  # the data and the geometry stand alone
    # each one first, after the package is forgotten: no import order hides a circle
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('tensorlab.graph')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module('tensorlab.graph.' + name)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd=Path(tl.__file__).parent.parent)


def test_frames_stay_inside_the_picture_and_around_their_modules_ops():
    _, g = four_layer_model()
    view = g.collapsed(1, expanded=["blocks.2", "blocks.2.ffn"])
    root = ET.fromstring(tg.svg.to_svg(view, frames=["blocks.2", "blocks.2.ffn"]))
    width, height = float(root.get("width")), float(root.get("height"))
    frames = {
        g_.find(SVG + "title").text.split(":")[0]: [
            float(g_.find(SVG + "rect").get(k)) for k in ("x", "y", "width", "height")
        ]
        for g_ in root.iter(SVG + "g")
        if g_.get("class") == "frame"
    }
    assert sorted(frames) == ["blocks.2", "blocks.2.ffn"]
    boxes = {
        g_.get("id"): [float(g_.find(SVG + "rect").get(k)) for k in ("x", "y", "width", "height")]
        for g_ in root.iter(SVG + "g")
        if "node" in g_.get("class", "").split()
    }
    for path, (fx, fy, fw, fh) in frames.items():
        assert 0 <= fx and fx + fw <= width and 0 <= fy and fy + fh <= height
        inside = [n for n in view.nodes if n.kind != "tensor" and path in [p for p, _, _ in n.scope]]
        assert inside
        for n in inside:
            x, y, w, h = boxes[n.id]
            assert fx <= x and x + w <= fx + fw and fy <= y and y + h <= fy + fh, (path, n.label)
    gelu = next(n for n in view.ops() if n.label == "Gelu")
    assert [p for p, _, _ in gelu.scope] == ["", "blocks.2", "blocks.2.ffn"]


def test_module_scopes_are_per_thread():
    import threading

    from tensorlab import nn
    from tensorlab.graph.scopes import module_stack as module_scope

    seen = {}

    def forward_in_a_thread():
        seen["other thread, before"] = list(module_scope.entries)
        graph = tg.capture(nn.Linear(3, 2)(leaf((2, 3))).sum())
        seen["scope"] = next(op.scope for op in graph.ops() if op.label == "Linear")

    class Outer(nn.Module):
        def forward(self, x):
            thread = threading.Thread(target=forward_in_a_thread)
            thread.start()
            thread.join()
            return x

    with tg.record():
        Outer()(leaf((1,)))
    assert seen["other thread, before"] == []  # Outer's forward, running in this thread, is not there
    assert [path for path, _, _ in seen["scope"]] == [""]  # the Linear alone, outermost in its thread


class TwoBlocks(tl.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = tl.nn.ModuleList([tl.nn.Linear(3, 3), tl.nn.Linear(3, 3)])

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x).tanh()
        return x.sum()


def test_outside_record_modules_note_nothing_and_ops_keep_no_scope(monkeypatch):
    """The viewer pays only while recording: outside tg.record() a module call is its forward alone (no name
    path computed) and an op keeps no copy of the module stack."""
    from tensorlab.graph import scopes
    from tensorlab.nn.module import call_hooks
    from tensorlab.tensor import record_observers, topological_order

    def no_path(module):
        raise AssertionError(f"a name path was computed for {type(module).__name__}")

    monkeypatch.setattr(scopes, "_path", no_path)
    model, x = TwoBlocks(), leaf((2, 3))
    loss = model(x)
    assert call_hooks == [] and record_observers == []
    fns = topological_order(loss.creator)
    assert len(fns) == 7 and not any(hasattr(fn, "scope") for fn in fns)
    assert {op.scope for op in tg.capture(loss).ops()} == {()}
    with pytest.raises(AssertionError, match="a name path was computed for TwoBlocks"), tg.record():
        model(x)  # inside, each call computes its path
    assert call_hooks == [] and record_observers == []  # the error left record() and took its hooks away


def test_record_blocks_nest_and_the_hooks_leave_with_the_outermost():
    from tensorlab.nn.module import call_hooks
    from tensorlab.tensor import record_observers

    model, x = TwoBlocks(), leaf((2, 3))
    with tg.record():
        with tg.record():
            inner = model(x)
        assert len(call_hooks) == len(record_observers) == 1  # installed once, still there
        after_inner = model(x)
    outside = model(x)
    assert call_hooks == [] and record_observers == []
    for loss in (inner, after_inner):
        tanh = [op for op in tg.capture(loss).ops() if op.label == "Tanh"]
        assert sorted(p for p, _, _ in (op.scope[-1] for op in tanh)) == ["", ""]  # the model's own ops
        linear = [op for op in tg.capture(loss).ops() if op.label == "Linear"]
        assert sorted(op.scope[-1][0] for op in linear) == ["blocks.0", "blocks.1"]
    assert {op.scope for op in tg.capture(outside).ops()} == {()}
