"""Read a drawn page's Plotly figures in the browser and find layout faults, from the figures'
own geometry: a legend box that covers a plot area holding traces, and tick labels that
overlap (rotated labels as the rotated boxes they are, not their upright bounding boxes)."""

#: JavaScript run in the page: one entry per fault, {figure, kind, detail}
FAULTS_JS = r"""
() => {
  const faults = [];
  const corners = (el) => {
    // the label's box in its own coordinates, carried to the screen by its full transform
    const b = el.getBBox(), m = el.getScreenCTM();
    if (!m || b.width === 0 || b.height === 0) return null;
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const separated = (p, q) => {  // separating axis test of two convex quadrilaterals
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
        const nx = y2 - y1, ny = x1 - x2;
        const proj = (r) => r.map(([x, y]) => x * nx + y * ny);
        const a = proj(p), b = proj(q);
        const len = Math.hypot(nx, ny) || 1;
        if (Math.max(...a) <= Math.min(...b) + 0.5 * len || Math.max(...b) <= Math.min(...a) + 0.5 * len) return true;
      }
    }
    return false;
  };
  const rect = (el) => el.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  document.querySelectorAll('.js-plotly-plot').forEach((gd, n) => {
    const title = (gd.layout && gd.layout.title && gd.layout.title.text) || `figure ${n}`;
    const full = gd._fullLayout;
    if (!full) return;
    // plot areas that hold a visible trace (a legend may sit over an empty corner of a figure)
    const areas = [];
    gd.querySelectorAll('.cartesianlayer .subplot').forEach((sp) => {
      const bg = sp.querySelector('.bg') || sp.querySelector('rect');
      const drawn = sp.querySelectorAll('.trace, .point, .heatmaplayer image, path.js-line, .bars path').length;
      if (bg && drawn) areas.push(rect(bg));
    });
    gd.querySelectorAll('.nsewdrag').forEach((d) => { if (!areas.length) areas.push(rect(d)); });
    const legend = gd.querySelector('g.legend');
    if (legend && legend.getBoundingClientRect().width > 0 && full.showlegend !== false) {
      const box = legend.querySelector('rect.bg') || legend;
      const lr = rect(box);
      for (const a of areas) {
        if (meet(lr, a)) faults.push({figure: title, kind: 'legend covers the plot', detail:
          `legend ${Math.round(lr.left)},${Math.round(lr.top)} ${Math.round(lr.width)}x${Math.round(lr.height)}`});
      }
    }
    // tick labels of each axis, pairwise
    gd.querySelectorAll('g.xaxislayer-above, g.yaxislayer-above').forEach((axis) => {
      const labels = Array.from(axis.querySelectorAll('g.xtick text, g.ytick text'))
        .filter((t) => (t.textContent || '').trim() && t.getAttribute('display') !== 'none'
                && getComputedStyle(t).opacity !== '0');
      const polys = labels.map(corners);
      for (let i = 0; i < labels.length; i++) {
        for (let j = i + 1; j < labels.length; j++) {
          if (polys[i] && polys[j] && !separated(polys[i], polys[j])) {
            faults.push({figure: title, kind: 'tick labels overlap',
                         detail: `${labels[i].textContent} / ${labels[j].textContent}`});
          }
        }
      }
    });
  });
  return faults;
}
"""


def layout_faults(page) -> list[dict]:
    """Every layout fault of the Plotly figures drawn on ``page`` (see FAULTS_JS)."""
    return page.evaluate(FAULTS_JS)
