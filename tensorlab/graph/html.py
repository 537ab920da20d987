"""An HTML page around the SVG: a summary, a legend, and, for a graph made by modules, boxes that open.

A graph whose ops were made inside modules opens at depth 1 (one box per child of the
model). The page holds one drawing per module, with that module and its parents open (a
dashed frame around each) and everything else closed; clicking a box shows its drawing,
clicking a frame's name closes it, and the path above the drawing leads back. The drawings
are laid out here in Python, so the page needs no script but the few lines that switch
between them, and, given a Trace, the replay of the backward pass (replay.py). It loads
nothing from elsewhere: it works offline.
"""

from xml.sax.saxutils import escape

import numpy as np

from tensorlab.graph import replay
from tensorlab.graph.labels import STYLES
from tensorlab.graph.svg import to_svg

LEGEND = [
    ("op", "op (a Function); the second line shows its settings"),
    ("module", "a module's ops in one box (click it to open it); arrows between boxes carry tensors"),
    ("param", "parameter: a leaf that requires grad; 'grad' is the norm of .grad after backward"),
    ("input", "input: data passed in (token ids, targets, x), no grad"),
    ("constant", "constant: made by the code (a number in an expression, a mask, a RoPE table), no grad"),
    ("intermediate", "intermediate tensor (its 'grad' needs a trace of the backward pass)"),
    ("output", "output (where backward starts)"),
]
OVERVIEW, EVERYTHING = "", "*"
SWITCH = """<script>
document.addEventListener("click", function (event) {
  var target = event.target.closest("[data-path]");
  var view = target && document.querySelector('.view[data-view="' + target.dataset.path + '"]');
  if (!view) return;
  event.preventDefault();
  document.querySelectorAll(".view").forEach(function (v) { v.hidden = v !== view; });
});
</script>"""


def to_html(graph, trace=None, title="tensorlab graph", depth=None):
    """A standalone HTML page; `graph` is a tensorlab.graph.view.Graph; it opens at `depth` (default 1).

    With a Trace of the backward pass the page replays it step by step (replay.py), and the arrows
    between module boxes show the norm of the gradient that flowed back along them.
    """
    depth = depth or 1
    params = graph.params()
    elements = sum(int(np.prod(p.shape)) for p in params)
    summary = (
        f"{len(graph.ops())} ops, {len(graph.tensors())} tensors, {len(params)} parameters ({elements:,} elements)"
    )
    paths = graph.module_paths()
    if paths:
        every = len(graph.ops())
        views = [_view(OVERVIEW, [], graph.collapsed(depth), trace, depth, every, hidden=False)]
        parents = _parents(graph)
        for path in paths:
            crumbs = parents[path] + [path]
            views.append(_view(path, crumbs, graph.collapsed(depth, expanded=crumbs), trace, depth, every))
        views.append(_view(EVERYTHING, [EVERYTHING], graph, trace, depth, every))
        body = "\n".join(views) + "\n" + SWITCH
    else:
        body = f'<div class="graph">\n{to_svg(graph, trace)}</div>'
    legend = []
    for role, meaning in LEGEND:
        if role == "module" and not paths:
            continue
        fill, stroke, _, radius = STYLES[role]
        legend.append(
            f'<li><span class="swatch" style="background:{fill};border-color:{stroke};'
            f'border-radius:{min(radius, 7)}px"></span>{escape(meaning)}</li>'
        )
    legend.append(
        '<li><span class="arrow">&#8594;</span>arrows follow the forward pass; '
        "backward walks them in reverse. Hover a node for details.</li>"
    )
    controls, player = replay.replay_html(graph, trace) if trace is not None else ("", "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
  h1 {{ font-size: 1.3em; margin: 0 0 0.2em; }}
  .summary {{ color: #555; margin-bottom: 0.8em; }}
  ul.legend {{ list-style: none; padding: 0; margin: 0 0 1em; font-size: 0.9em; }}
  ul.legend li {{ margin: 0.2em 0; display: flex; align-items: center; }}
  .swatch {{ display: inline-block; width: 1.6em; height: 1em; border: 1.5px solid; margin-right: 0.6em; }}
  .arrow {{ display: inline-block; width: 1.6em; margin-right: 0.6em; text-align: center; }}
  .graph {{ overflow: auto; border: 1px solid #ddd; }}
  .crumbs {{ margin: 0.4em 0; }}
  g.module, g.frame {{ cursor: pointer; }}
{replay.STYLE if trace is not None else ""}</style>
</head>
<body>
<h1>{escape(title)}</h1>
<div class="summary">{escape(summary)}</div>
<ul class="legend">
{chr(10).join(legend)}
</ul>
{controls}
{body}
{player}
</body>
</html>
"""


def _parents(graph):
    """{module path: the paths of the modules around it, outermost first}, from the ops' scopes."""
    parents = {}
    for op in graph.ops():
        chain = [path for path, _, _ in op.scope[1:]]
        for i, path in enumerate(chain):
            parents.setdefault(path, chain[:i])
    return parents


def _view(path, crumbs, graph, trace, depth, every, hidden=True):
    """One drawing, with links back to the overview and to each open parent; open modules are framed."""
    links = [f'<a href="#" data-path="">overview (depth {depth})</a>']
    links += [f'<a href="#" data-path="{escape(c)}">{escape(c)}</a>' for c in crumbs if c != EVERYTHING]
    links.append(
        f'<a href="#" data-path="{EVERYTHING}">everything (all {every} ops)</a>'
        if path != EVERYTHING
        else f"everything (all {every} ops)"
    )
    return (
        f'<div class="view" data-view="{escape(path)}"{" hidden" if hidden else ""}>\n'
        f'<div class="crumbs">{" &#8250; ".join(links)}</div>\n'
        f'<div class="graph">\n{to_svg(graph, trace, [c for c in crumbs if c != EVERYTHING])}</div>\n</div>'
    )
