"""The linguistic-prior block of a result (seed 001) as verdict lines, Markdown and HTML.

Pure functions over a result's ``prior`` block (``results.blocks``). The
HTML carries the seed's Figure 1 as an inline SVG heatmap: the model's accuracy per
(true-caption perplexity bin x best-negative perplexity bin). Rows go from the lowest true
perplexity down, columns from the highest best-negative perplexity right, so the top-left
cell is where the prior is surest and the bottom-right where it is most misled; a model that
follows the prior is bright top-left and dark bottom-right.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pytest_vlcheck import fmt
from pytest_vlcheck.results.blocks import Prior, PriorBlock, PriorNotApplicable

__all__ = ["grid_svg", "prior_html", "prior_markdown", "prior_summary", "prior_verdict_lines"]

_HEADER = [
    "model",
    "prior",
    "prior accuracy",
    "hard",
    "hard-test accuracy",
    "95% CI",
    "accuracy",
    "linguistic gap",
    "hard threshold",
]
_CELL_W, _CELL_H, _LEFT, _TOP = 78, 34, 118, 46
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _gap(block: PriorBlock) -> str:
    gap = block.linguistic_gap
    return fmt.MISSING if gap is None else f"{100 * gap:+.1f} pts"


def _threshold(block: Prior) -> str:
    limit = block.hard_threshold
    if limit is None:
        return "-"
    met = block.hard_threshold_met if isinstance(block, PriorBlock) else None
    verdict = {True: "met", False: "NOT met", None: "not judged"}[met]
    return f"{fmt.pct(limit)} {verdict}"


def prior_summary(block: Prior) -> str:
    """One line: the prior's accuracy, the hard-test accuracy with its interval, the gap."""
    names = "+".join(block.priors) or "no prior"
    if isinstance(block, PriorNotApplicable):
        return f"linguistic prior ({names}): {block.reason}"
    hard = (
        f"hard-test accuracy {fmt.pct(block.hard_accuracy)} "
        f"({block.hard_passed}/{block.n_hard} hard, "
        f"95% CI {fmt.ci(block.hard_ci_low, block.hard_ci_high)})"
        if block.n_hard
        else "no hard example (the prior is right on every one)"
    )
    return (
        f"linguistic prior ({names}): prior accuracy {fmt.pct(block.prior_accuracy)} "
        f"over {block.n}; {hard}; accuracy {fmt.pct(block.accuracy)}, "
        f"linguistic gap {_gap(block)}"
    )


def prior_verdict_lines(block: Prior | None) -> list[str]:
    """Verdict details: the summary, and what became of a ``hard_threshold``."""
    if block is None:
        return []
    lines = [prior_summary(block)]
    limit = block.hard_threshold
    if limit is None or isinstance(block, PriorNotApplicable):
        if limit is not None and block.priors:
            lines.append("hard_threshold not applied: the prior does not apply to this test")
        return lines
    met = block.hard_threshold_met
    if met is None:
        lines.append(f"hard_threshold {fmt.pct(limit)} not judged: no hard example")
    else:
        relation = ">=" if met else "<"
        outcome = "holds" if met else "fails: the test fails whatever its pass rate"
        lines.append(
            f"hard_threshold: hard-test accuracy {fmt.pct(block.hard_accuracy)} {relation} "
            f"{fmt.pct(limit)}, {outcome}"
        )
    return lines


def _row(name: str, block: Prior) -> list[str]:
    names = "+".join(block.priors) or "-"
    if isinstance(block, PriorNotApplicable):
        return [name, names, block.reason, "", "", "", "", "", _threshold(block)]
    return [
        name,
        names,
        fmt.pct(block.prior_accuracy),
        f"{block.n_hard}/{block.n}",
        fmt.pct(block.hard_accuracy),
        fmt.ci(block.hard_ci_low, block.hard_ci_high),
        fmt.pct(block.accuracy),
        _gap(block),
        _threshold(block),
    ]


def prior_markdown(blocks: Sequence[tuple[str, Prior]]) -> list[str]:
    """A test section's prior table for ``matrix.md`` from its (model, prior block) pairs
    ([] when no result has a prior)."""
    if not blocks:
        return []
    lines = ["Linguistic prior (seed 001; hard = the prior picks a wrong caption):", ""]
    lines.append("| " + " | ".join(_HEADER) + " |")
    lines.append("|" + "---|" * len(_HEADER))
    for name, block in blocks:
        cells_md = [str(c).replace("|", "\\|") for c in _row(name, block)]
        lines.append("| " + " | ".join(cells_md) + " |")
    return [*lines, ""]


def _shade(rate: float) -> tuple[str, str]:
    """Fill and text colour: white (0%) to blue (100%)."""
    r, g, b = (round(255 + (c - 255) * rate) for c in (0, 114, 178))
    return f"#{r:02x}{g:02x}{b:02x}", "#ffffff" if rate > 0.55 else "#111827"


def _range(edges: Sequence[float], i: int) -> str:
    return f"{edges[i]:.3g}-{edges[i + 1]:.3g}"


def grid_svg(grid: Mapping[str, Any], title: str) -> str:
    """The Figure-1 heatmap: accuracy and count per cell; empty cells are grey."""
    rows = len(grid["n"])
    cols = len(grid["n"][0]) if rows else 0
    width, height = _LEFT + cols * _CELL_W + 8, _TOP + rows * _CELL_H + 8
    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title, quote=True)}">',
        f'<text x="{_LEFT}" y="14" {_FONT}>best negative perplexity (high to low) &#8594;</text>',
        f'<text x="4" y="{_TOP - 6}" {_FONT}>true perplexity &#8595;</text>',
    ]
    for c in range(cols):
        j = cols - 1 - c  # highest best-negative perplexity first
        x = _LEFT + c * _CELL_W + _CELL_W / 2
        label = _range(grid["negative_edges"], j)
        out.append(f'<text x="{x:.1f}" y="34" text-anchor="middle" {_FONT}>{label}</text>')
    for i in range(rows):
        y = _TOP + i * _CELL_H
        out.append(
            f'<text x="4" y="{y + _CELL_H / 2 + 4:.1f}" {_FONT}>'
            f"{_range(grid['true_edges'], i)}</text>"
        )
        for c in range(cols):
            j = cols - 1 - c
            n, passed = grid["n"][i][j], grid["passed"][i][j]
            x = _LEFT + c * _CELL_W
            fill, ink = _shade(passed / n) if n else ("#eceff1", "#6b7280")
            text = f"{fmt.pct(passed / n)} (n={n})" if n else "-"
            out.append(
                f'<rect x="{x}" y="{y}" width="{_CELL_W - 2}" height="{_CELL_H - 2}" '
                f'fill="{fill}"><title>{passed}/{n}</title></rect>'
            )
            out.append(
                f'<text x="{x + _CELL_W / 2 - 1:.1f}" y="{y + _CELL_H / 2 + 3:.1f}" '
                f'text-anchor="middle" fill="{ink}" {_FONT}>{text}</text>'
            )
    out.append("</svg>")
    return "\n".join(out)


def prior_html(blocks: Sequence[tuple[str, Prior]]) -> list[str]:
    """A test section's prior table and one Figure-1 heatmap per model, from its (model,
    prior block) pairs ([] without priors)."""
    if not blocks:
        return []
    out = [
        "<p>Linguistic prior (seed 001; hard = the prior picks a wrong caption)</p>",
        "<table>",
        "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in _HEADER) + "</tr>",
    ]
    for name, block in blocks:
        row = _row(name, block)
        out.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>")
    out.append("</table>")
    for name, block in blocks:
        grid = block.grid if isinstance(block, PriorBlock) else None
        if grid and grid.get("n"):
            title = f"{name}: accuracy by perplexity bin (seed 001, Figure 1)"
            out += [
                "<figure>",
                f"<figcaption>{escape(title)}</figcaption>",
                grid_svg(grid, title),
                "</figure>",
            ]
    return out
