"""Step through a backward pass in the HTML view, in the order the engine ran it.

A Trace records one step per Function, as `Tensor.backward` calls its observers: the
gradient that reached the Function's output and the gradient it returned for each input,
each as a norm and a `Heatmap` (a few evenly spaced rows and columns of the array). The
HTML page embeds those steps as JSON (`replay_steps`) with the buttons and keys that walk
them (`replay_html`): step (right arrow), back (left arrow), play or pause (space). Each
step lights its op, or the module box that holds it, and the tensors its gradients reach,
and draws beside them the norm and the heatmap; the panel lists the whole step.
"""

import json
import math
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

from tensorlab import backend
from tensorlab.graph.groups import box_id
from tensorlab.graph.labels import format_norm

HEATMAP_SIDE = 8  # a heatmap shows at most this many rows and as many columns
LEVELS = 99  # heatmap values travel as integers -99..99, a fraction of the largest shown


@dataclass
class Heatmap:
    """A few evenly spaced rows and columns of a gradient seen as a matrix (all axes but the last make the rows)."""

    shape: tuple  # the gradient's shape
    matrix: tuple  # the matrix's (rows, columns): (1, n) for a vector, (1, 1) for a number
    rows: np.ndarray  # the rows shown
    cols: np.ndarray  # the columns shown
    values: np.ndarray  # float64 (len(rows), len(cols)): matrix[rows][:, cols]

    @classmethod
    def of(cls, grad):
        matrix = grad.reshape(1, -1) if grad.ndim < 2 else grad.reshape(-1, grad.shape[-1])
        rows, cols = _evenly_spaced(matrix.shape[0]), _evenly_spaced(matrix.shape[1])
        xp = backend.array_module(grad)
        picked = matrix[xp.asarray(rows)][:, xp.asarray(cols)]
        values = np.asarray(backend.to_device(picked, "cpu"), dtype=np.float64)
        return cls(tuple(grad.shape), tuple(matrix.shape), rows, cols, values)

    def to_json(self):
        """{shape, matrix, rows, cols, scale, levels}: levels[i][j] = round(99 * value / scale), null if not finite."""
        finite = np.abs(self.values[np.isfinite(self.values)])
        scale = float(finite.max()) if finite.size else 0.0
        levels = [[_level(v, scale) for v in row] for row in self.values.tolist()]
        return {
            "shape": list(self.shape),
            "matrix": list(self.matrix),
            "rows": self.rows.tolist(),
            "cols": self.cols.tolist(),
            "scale": scale,
            "levels": levels,
        }


def _level(value, scale):
    """`value` as an integer from -LEVELS to LEVELS, a fraction of `scale`; None if it is NaN or infinite."""
    if not math.isfinite(value):
        return None
    return round(LEVELS * value / scale) if scale else 0


def _evenly_spaced(n):
    """At most HEATMAP_SIDE indices from 0 to n - 1, evenly spaced, first and last included."""
    return np.unique(np.linspace(0, n - 1, min(n, HEATMAP_SIDE)).round().astype(np.int64))


def replay_steps(graph, trace):
    """The trace's steps as JSON-ready dicts, in the order backward ran them, for the Functions in `graph`.

    Each step: `op` (the op's node id), `boxes` (the ids of the module boxes that may hold it, outermost
    first), `name`, `where` (its module path), `received` (one entry per output) and `sent` (one per
    input that took a gradient); an entry has `node` (the tensor's node id, or null if the graph does
    not draw it), `name`, `norm`, `text` (the norm as printed) and `heat` (Heatmap.to_json()).
    """
    ops = {id(node.fn()): node for node in graph.ops() if node.fn() is not None}
    output_node, input_nodes = {}, {}  # (op id, output index) -> tensor id; op id -> [tensor ids]
    for edge in graph.edges:
        src, dst = graph.by_id[edge.src], graph.by_id[edge.dst]
        if src.kind == "op":
            output_node[src.id, dst.output_index] = dst.id
        else:
            input_nodes.setdefault(dst.id, []).append(src.id)
    steps = []
    for step in trace.steps:
        op = ops.get(id(step.fn))
        if op is None:  # a backward pass through another graph
            continue
        received = []
        for i, ((_, norm), heatmap) in enumerate(zip(step.output_grads, step.output_heatmaps)):
            node_id = output_node.get((op.id, i))
            unnamed = "its output" if len(step.output_grads) == 1 else f"its output {i}"
            received.append(_entry(node_id, node_id and graph.by_id[node_id].label or unnamed, norm, heatmap))
        sent = [
            _entry(node_id, record.name + (" (leaf)" if record.is_leaf else ""), record.norm, record.heatmap)
            for node_id, record in zip(input_nodes.get(op.id, []), step.inputs)
            if record.norm is not None
        ]
        steps.append(
            {
                "op": op.id,
                "boxes": [box_id(call) for _, _, call in op.scope[1:]],
                "name": op.label + (f"({op.settings})" if op.settings else ""),
                "where": op.scope[-1][0] if op.scope else "",
                "received": received,
                "sent": sent,
            }
        )
    return steps


def _entry(node_id, name, norm, heatmap):
    return {
        "node": node_id,
        "name": name,
        "norm": norm if math.isfinite(norm) else str(norm),  # JSON has no NaN or infinity
        "text": format_norm(norm),
        "heat": heatmap.to_json(),
    }


def replay_html(graph, trace):
    """(the controls, to put above the drawings; the panel, the steps as JSON and the script, to put after them)."""
    steps = replay_steps(graph, trace)
    data = json.dumps({"steps": steps}, separators=(",", ":")).replace("</", "<\\/")
    controls = f"""<div class="replay-bar" id="replay-bar">
<button type="button" data-replay="back" title="left arrow">&#9664; back</button>
<button type="button" data-replay="step" title="right arrow">step &#9654;</button>
<button type="button" data-replay="play" title="space">play</button>
<span id="replay-position">{escape(f"step 0 of {len(steps)}")}</span>
<span class="replay-hint">replay the backward pass in the order the engine ran it: &#8594; step,
&#8592; back, space play/pause</span>
</div>"""
    player = f"""<div class="replay-panel" id="replay-panel" hidden></div>
<script type="application/json" id="replay-data">{data}</script>
<script>
{SCRIPT}
</script>"""
    return controls, player


STYLE = """
  .replay-bar { position: sticky; top: 0; background: #fff; padding: 0.4em 0; z-index: 2;
                border-bottom: 1px solid #ddd; margin-bottom: 0.5em; }
  .replay-bar button { font: inherit; margin-right: 0.3em; }
  .replay-hint { color: #777; font-size: 0.85em; margin-left: 0.6em; }
  .replay-panel { position: fixed; right: 1em; bottom: 1em; max-width: 24em; max-height: 60vh; overflow: auto;
                  background: #fff; border: 1px solid #d9480f; padding: 0.6em; font-size: 0.85em; z-index: 3; }
  .replay-panel .grad { margin: 0.4em 0; }
  .replay-panel svg { display: block; margin-top: 0.2em; }
  g.node.lit > rect { stroke: #d9480f; stroke-width: 2.5; }
  g.node.current > rect { fill: #ffd8a8; stroke: #d9480f; stroke-width: 3.5; }
  path.edge.lit { stroke: #d9480f; }
  .graph svg { overflow: visible; }  /* a callout beside a node at the right edge stays readable */
  g.callout text { font-size: 10px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
"""

# Plays the steps in #replay-data. `done` steps have run; a step lights, in the drawing on screen, the
# node that shows its op (the op itself, or the closed module box holding it) and the tensors its
# gradients reach (a node, or the arrows a collapsed view draws for it); the last step's are `current`
# and get a callout each: the norm of the gradient and its heatmap. Opening another drawing lights it.
SCRIPT = r"""
(function () {
  var steps = JSON.parse(document.getElementById("replay-data").textContent).steps;
  var done = 0, timer = null, SVGNS = "http://www.w3.org/2000/svg";
  var position = document.getElementById("replay-position"), panel = document.getElementById("replay-panel");
  var playButton = document.querySelector('[data-replay="play"]');

  function nodeIn(svg, id) { return svg.querySelector('g.node[id="' + id + '"]'); }

  function opIn(svg, step) {  // the op's own node, else the closed box that holds it
    var ids = [step.op].concat(step.boxes);
    for (var i = 0; i < ids.length; i++) { var node = nodeIn(svg, ids[i]); if (node) return node; }
    return null;
  }

  function tensorIn(svg, grad) {  // [the tensor's node], or the arrows that stand for it, or []
    if (!grad.node) return [];
    var node = nodeIn(svg, grad.node);
    if (node) return [node];
    return Array.prototype.slice.call(svg.querySelectorAll('path.edge[data-tensor="' + grad.node + '"]'));
  }

  function colour(level) {
    if (level === null) return "#000000";
    var t = Math.abs(level) / 99, fade = Math.round(255 * (1 - 0.85 * t));
    return level >= 0 ? "rgb(255," + fade + "," + fade + ")" : "rgb(" + fade + "," + fade + ",255)";
  }

  function heatmap(heat, cell) {  // an <svg> of coloured cells: red positive, blue negative, black NaN/inf
    var svg = document.createElementNS(SVGNS, "svg");
    var rows = heat.levels.length, cols = rows ? heat.levels[0].length : 0;
    svg.setAttribute("width", cols * cell + 1);
    svg.setAttribute("height", rows * cell + 1);
    svg.setAttribute("class", "heatmap");
    heat.levels.forEach(function (row, i) {
      row.forEach(function (level, j) {
        var rect = document.createElementNS(SVGNS, "rect");
        rect.setAttribute("x", j * cell + 0.5); rect.setAttribute("y", i * cell + 0.5);
        rect.setAttribute("width", cell); rect.setAttribute("height", cell);
        rect.setAttribute("fill", colour(level));
        rect.setAttribute("stroke", "#ddd"); rect.setAttribute("stroke-width", 0.5);
        svg.appendChild(rect);
      });
    });
    return svg;
  }

  function describe(heat) {
    return heat.rows.length + " of " + heat.matrix[0] + " rows, " + heat.cols.length + " of " + heat.matrix[1] +
      " columns; colour scale \u00b1" + heat.scale.toPrecision(3);
  }

  function callout(svg, node, label, heat) {  // the norm and heatmap beside `node`, in the drawing on screen
    var box = node.getBBox(), cell = 5, group = document.createElementNS(SVGNS, "g");
    group.setAttribute("class", "callout");
    var text = document.createElementNS(SVGNS, "text");
    text.setAttribute("x", box.x + box.width + 8); text.setAttribute("y", box.y + 10);
    text.setAttribute("fill", "#b4430e"); text.textContent = label;
    var map = heatmap(heat, cell);
    map.setAttribute("x", box.x + box.width + 8); map.setAttribute("y", box.y + 14);
    group.appendChild(text); group.appendChild(map);
    svg.appendChild(group);
  }

  function panelEntry(title, grad) {
    var div = document.createElement("div");
    div.className = "grad";
    div.textContent = title + " " + grad.name + " (" + grad.heat.shape.join(", ") + "): |grad| = " + grad.text;
    var note = document.createElement("div");
    note.textContent = describe(grad.heat);
    div.appendChild(heatmap(grad.heat, 9)); div.appendChild(note);
    return div;
  }

  function render() {
    position.textContent = "step " + done + " of " + steps.length;
    document.querySelectorAll(".lit, .current").forEach(function (el) { el.classList.remove("lit", "current"); });
    document.querySelectorAll("g.callout").forEach(function (el) { el.remove(); });
    document.querySelectorAll(".graph svg").forEach(function (svg) {
      if (svg.getBoundingClientRect().width === 0) return;  // a hidden drawing: lit when it is opened
      steps.slice(0, done).forEach(function (step, k) {
        var current = k === done - 1, op = opIn(svg, step), marks = op ? [op] : [];
        step.received.concat(step.sent).forEach(function (g) { marks = marks.concat(tensorIn(svg, g)); });
        marks.forEach(function (el) { el.classList.add("lit"); if (current) el.classList.add("current"); });
        if (!current) return;
        if (op) op.scrollIntoView({ block: "nearest", inline: "nearest" });
        if (op && step.received.length) callout(svg, op, "grad in " + step.received[0].text, step.received[0].heat);
        step.sent.forEach(function (g) {
          var node = g.node && nodeIn(svg, g.node);
          if (node && node !== op) callout(svg, node, "grad " + g.text, g.heat);
        });
      });
    });
    panel.hidden = done === 0;
    panel.textContent = "";
    if (done === 0) return;
    var step = steps[done - 1], head = document.createElement("div");
    head.innerHTML = "<b></b>";
    head.firstChild.textContent = "step " + done + " of " + steps.length + ": " + step.name +
      (step.where ? " in " + step.where : "");
    panel.appendChild(head);
    step.received.forEach(function (g) { panel.appendChild(panelEntry("received for", g)); });
    step.sent.forEach(function (g) { panel.appendChild(panelEntry("sent to", g)); });
  }

  function go(to) { done = Math.max(0, Math.min(steps.length, to)); render(); }
  function pause() { clearInterval(timer); timer = null; playButton.textContent = "play"; }
  function play() {
    if (timer) return pause();
    if (done === steps.length) go(0);
    playButton.textContent = "pause";
    timer = setInterval(function () { if (done >= steps.length) pause(); else go(done + 1); }, 600);
  }
  var actions = {
    back: function () { pause(); go(done - 1); },
    step: function () { pause(); go(done + 1); },
    play: play,
  };

  document.getElementById("replay-bar").addEventListener("click", function (event) {
    var button = event.target.closest("[data-replay]");
    if (!button) return;
    button.blur();  // so that space, next, plays or pauses once instead of pressing the button again
    actions[button.dataset.replay]();
  });
  document.addEventListener("keydown", function (event) {
    var action = { ArrowRight: "step", ArrowLeft: "back", " ": "play" }[event.key];
    if (!action || event.target.closest("input, textarea, select")) return;
    event.preventDefault();
    actions[action]();
  });
  document.addEventListener("click", function (event) {  // another drawing was opened: light it too
    if (event.target.closest("[data-path]")) render();
  });
})();
"""
