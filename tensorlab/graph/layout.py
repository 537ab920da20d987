"""A layered layout for a captured graph: rows by depth, inputs at the top, the outputs at the bottom.

The classic recipe for drawing a DAG (Sugiyama's), kept small:

1. Rows. A node's row is its depth, the longest path from it to an output, so
   every edge points down. An edge that skips rows gets an invisible waypoint in
   each row it crosses, so that it has a lane of its own and no node sits on it.
2. Order within rows. Put each node at the mean position of its neighbours in the
   row below (then above, and so on: a few sweeps), and keep the ordering with the
   fewest edge crossings. Ties keep argument order, so `a` sits left of `b`.
3. x coordinates. Each node would like to sit at the mean x of its neighbours;
   within a row the order is fixed and nodes may not overlap. The best positions
   for one row under those rules are an isotonic regression (pool adjacent
   violators), and a few sweeps over the rows let chains straighten out.

Text is monospace, so a node's width follows from its longest line.
"""

from dataclasses import dataclass, field

CHAR_WIDTH = 7.2  # px per character at font-size 12 monospace
LINE_HEIGHT = 15
PAD_X, PAD_Y = 10, 7
NODE_GAP = 22  # horizontal space between neighbours in a row
WAYPOINT_WIDTH = 6  # the lane a long edge takes in a row it passes through
ROW_GAP = 40  # vertical space between rows (room for the arrows)
MARGIN = 20
PORT_SPACING = 30  # px between the arrow heads of a node's inputs
LANE_WEIGHT = 8.0  # how hard a long edge's waypoints pull on each other (straight lanes)
ORDER_SWEEPS = 6
PLACE_SWEEPS = 12


@dataclass
class Box:
    """Where a node (or a long edge's waypoint) is drawn: centre (x, y), width w, height h."""

    x: float
    y: float
    w: float
    h: float

    @property
    def top(self):
        return self.y - self.h / 2

    @property
    def bottom(self):
        return self.y + self.h / 2


@dataclass
class Layout:
    boxes: dict  # node id -> Box
    waypoints: dict = field(default_factory=dict)  # edge index -> [Box] from the source's row down
    ports: dict = field(default_factory=dict)  # edge index -> x of its arrow head, from the target's centre
    width: float = 0.0
    height: float = 0.0


def layout(graph, lines, port_spacing=None):
    """Place every node of `graph`; `lines` maps node id to the text lines drawn in it.

    The edges into a node land side by side, `port_spacing[node id]` px apart (default
    PORT_SPACING); a node with three or more inputs is made wide enough for them.
    """
    port_spacing = port_spacing or {}
    incoming = {}
    for i, edge in enumerate(graph.edges):
        incoming.setdefault(edge.dst, []).append(i)
    boxes = {}
    for node in graph.nodes:
        text = lines[node.id]
        width = max(len(line) for line in text) * CHAR_WIDTH + 2 * PAD_X
        k = len(incoming.get(node.id, ()))
        if k > 2:
            width = max(width, k * port_spacing.get(node.id, PORT_SPACING))
        boxes[node.id] = Box(0.0, 0.0, max(width, 56.0), len(text) * LINE_HEIGHT + 2 * PAD_Y)
    ports = {}
    for node_id, edges in incoming.items():
        spacing = min(port_spacing.get(node_id, PORT_SPACING), boxes[node_id].w / len(edges))
        for slot, i in enumerate(edges):
            ports[i] = (slot - (len(edges) - 1) / 2) * spacing

    rows, up, down, waypoints = _layered_graph(graph, boxes, ports)
    _order_rows(rows, up, down)
    _place_rows(rows, up, down, boxes)
    _straighten_lanes(rows, waypoints, boxes)

    # y: the deepest row at the top.
    y = MARGIN
    for depth in sorted(rows, reverse=True):
        height = max(boxes[item].h for item in rows[depth])
        for item in rows[depth]:
            boxes[item].y = y + height / 2
            if item.startswith("~"):  # a waypoint spans the whole row
                boxes[item].h = height
        y += height + ROW_GAP
    left = min(b.x - b.w / 2 for b in boxes.values())
    for box in boxes.values():
        box.x += MARGIN - left
    width = max(b.x + b.w / 2 for b in boxes.values()) + MARGIN
    routes = {i: [boxes[item] for item in items] for i, items in waypoints.items()}
    node_boxes = {n.id: boxes[n.id] for n in graph.nodes}
    return Layout(node_boxes, routes, ports, width, y - ROW_GAP + MARGIN)


def _layered_graph(graph, boxes, ports):
    """Rows {depth: [item]}, neighbour lists and each long edge's waypoints.

    Items are node ids and waypoint ids ("~3.5": edge 3 in row 5). `down[item]` lists
    (item below, weight, dx) and `up[item]` (item above, weight, dx): the upper item
    wants to sit at the lower one's x + dx (dx places an edge over its port).
    """
    rows, up, down, waypoints = {}, {}, {}, {}
    depth = {}
    for node in graph.nodes:
        rows.setdefault(node.depth, []).append(node.id)
        up[node.id], down[node.id] = [], []
        depth[node.id] = node.depth
    for i, edge in enumerate(graph.edges):
        chain = [edge.src]
        for d in range(depth[edge.src] - 1, depth[edge.dst], -1):
            item = f"~{i}.{d}"
            boxes[item] = Box(0.0, 0.0, WAYPOINT_WIDTH, 0.0)
            rows[d].append(item)
            up[item], down[item] = [], []
            chain.append(item)
        chain.append(edge.dst)
        if len(chain) > 2:
            waypoints[i] = chain[1:-1]
        for a, b in zip(chain, chain[1:]):
            # Long edges pull harder on their own waypoints, so they run straight.
            weight = LANE_WEIGHT if a.startswith("~") and b.startswith("~") else 1.0
            dx = ports.get(i, 0.0) if b == edge.dst else 0.0
            down[a].append((b, weight, dx))
            up[b].append((a, weight, dx))
    return rows, up, down, waypoints


def _order_rows(rows, up, down):
    """Reorder each row (in place) by barycenter sweeps; keep the order with the fewest crossings."""
    depths = sorted(rows)
    position = {}

    def number(row):
        for i, item in enumerate(row):
            position[item] = i

    def sort_by(row, neighbours):
        def key(item):
            ps = [position[n] for n, _, _ in neighbours[item]]
            return sum(ps) / len(ps) if ps else position[item]

        row.sort(key=key)  # stable: ties keep their order, so arguments stay a, b, c
        number(row)

    for d in depths:
        number(rows[d])
    for d in depths[1:]:  # start from the outputs and go up
        sort_by(rows[d], down)
    best, best_crossings = {d: list(rows[d]) for d in depths}, _crossings(rows, down, position)
    for sweep in range(ORDER_SWEEPS):
        if sweep % 2 == 0:
            for d in reversed(depths[:-1]):  # top down: follow the producers
                sort_by(rows[d], up)
        else:
            for d in depths[1:]:  # bottom up: follow the consumers
                sort_by(rows[d], down)
        crossings = _crossings(rows, down, position)
        if crossings < best_crossings:
            best, best_crossings = {d: list(rows[d]) for d in depths}, crossings
    for d in depths:
        rows[d][:] = best[d]


def _crossings(rows, down, position):
    """How many pairs of edges cross between adjacent rows."""
    total = 0
    for row in rows.values():
        edges = sorted((position[a], position[b]) for a in row for b, _, _ in down[a])
        for i, (_, b1) in enumerate(edges):
            total += sum(1 for a2, b2 in edges[i + 1 :] if b2 < b1 and a2 != edges[i][0])
    return total


def _place_rows(rows, up, down, boxes):
    """x for every item: rows packed side by side, then relaxed towards their neighbours' mean x."""
    for row in rows.values():
        x = 0.0
        for item in row:
            boxes[item].x = x + boxes[item].w / 2
            x += boxes[item].w + NODE_GAP
    depths = sorted(rows)
    for sweep in range(PLACE_SWEEPS):
        for d in depths if sweep % 2 == 0 else reversed(depths):
            row = rows[d]
            wishes = []
            for item in row:
                # Above: sit at its x, shifted by our port's offset; below: over the port we feed.
                pulls = [(boxes[n].x - dx, w) for n, w, dx in up[item]]
                pulls += [(boxes[n].x + dx, w) for n, w, dx in down[item]]
                total = sum(w for _, w in pulls)
                wishes.append(sum(x * w for x, w in pulls) / total if total else boxes[item].x)
            for item, x in zip(row, _closest_positions(wishes, [boxes[i].w for i in row])):
                boxes[item].x = x


def _straighten_lanes(rows, waypoints, boxes):
    """Move each long edge's waypoints right, to one common x, wherever that overlaps nothing."""
    right_neighbour = {}
    for row in rows.values():
        for a, b in zip(row, row[1:]):
            right_neighbour[a] = b
    for items in waypoints.values():
        target = max(boxes[item].x for item in items)
        for item in items:
            box, neighbour = boxes[item], right_neighbour.get(item)
            limit = float("inf") if neighbour is None else boxes[neighbour].x - boxes[neighbour].w / 2 - NODE_GAP
            if target + box.w / 2 <= limit:
                box.x = target


def _closest_positions(wishes, widths):
    """x_i as close as possible (least squares) to wishes_i, in order, without overlaps.

    With offsets o_i (the least distance from the first item), y_i = x_i - o_i must
    not decrease; fitting y to wishes_i - o_i is isotonic regression, solved by
    pooling adjacent violators: neighbouring items that want to be in the wrong order
    are merged into one block at their mean.
    """
    offsets = [0.0]
    for a, b in zip(widths, widths[1:]):
        offsets.append(offsets[-1] + (a + b) / 2 + NODE_GAP)
    blocks = []  # [sum of targets, count]
    for wish, offset in zip(wishes, offsets):
        blocks.append([wish - offset, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    xs = []
    for total, count in blocks:
        xs.extend([total / count] * count)
    return [y + offset for y, offset in zip(xs, offsets)]
