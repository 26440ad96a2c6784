"""Inline SVG charts for the HTML reports: no script, no external asset, readable without
JavaScript (values are printed next to bars; hovering shows a <title> tooltip)."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = ["grouped_bars", "outcome_bars"]


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _svg_legend(items: Sequence[tuple[str, str]], x0: int, y0: int, width: int) -> tuple[str, int]:
    """Legend entries laid out in rows within `width`; returns (svg, height used)."""
    parts, x, y = [], x0, y0
    for label, color in items:
        text = label[:40]
        w = 18 + 7 * len(text) + 14
        if x + w > x0 + width and x > x0:
            x, y = x0, y + 16
        parts.append(f'<rect x="{x}" y="{y}" width="11" height="11" fill="{color}"/>')
        parts.append(f'<text x="{x + 15}" y="{y + 10}" font-size="11">{_esc(text)}</text>')
        x += w
    return "".join(parts), y - y0 + 16


def grouped_bars(
    title: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, str]],
    values: Sequence[Sequence[float | None]],
    *,
    vmax: float | None = None,
    digits: int = 3,
) -> str:
    """Horizontal grouped bars as inline SVG: per group, one bar per series (values[g][s]);
    None is drawn as 'n/a'."""
    if not groups:
        return ""
    label_w, bar_w, bar_h, gap = 170, 300, 13, 10
    width = label_w + bar_w + 60
    legend, legend_h = _svg_legend(series, 4, 26, width - 8)
    top = 26 + legend_h + 6
    group_h = bar_h * len(series) + gap
    height = top + group_h * len(groups)
    flat = [v for row in values for v in row if v is not None]
    vmax = vmax or max(flat, default=1.0) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{_esc(title)}" class="chart">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{_esc(title)}</text>',
        legend,
    ]
    for gi, name in enumerate(groups):
        y0 = top + gi * group_h
        mid = y0 + bar_h * len(series) / 2 + 4
        parts.append(
            f'<text x="4" y="{mid:.0f}" font-size="11"><title>{_esc(name)}</title>'
            f"{_esc(_clip(name, 27))}</text>"
        )
        for si, (label, color) in enumerate(series):
            v = values[gi][si]
            y = y0 + si * bar_h
            if v is None:
                parts.append(
                    f'<text x="{label_w + 2}" y="{y + 10}" font-size="10" fill="#888">n/a</text>'
                )
                continue
            w = max(0.0, min(1.0, v / vmax)) * bar_w
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                f'fill="{color}"><title>{_esc(label)}: {v:.{digits}f}</title></rect>'
            )
            parts.append(
                f'<text x="{label_w + w + 4:.1f}" y="{y + 10}" font-size="10">{v:.{digits}f}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def outcome_bars(
    title: str, rows: Sequence[tuple[str, str, Counter[str]]], class_colors: dict[str, str]
) -> str:
    """One 100% bar per (label, run color, outcome counts): pass and each failure class as a
    share of that run's candidates, so runs of different n compare."""
    if not rows:
        return ""
    label_w, bar_w, bar_h = 170, 340, 16
    width = label_w + bar_w + 20
    legend, legend_h = _svg_legend(list(class_colors.items()), 4, 26, width - 8)
    top = 26 + legend_h + 6
    height = top + (bar_h + 6) * len(rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{_esc(title)}" class="chart">',
        f'<text x="4" y="16" font-size="13" font-weight="bold">{_esc(title)}</text>',
        legend,
    ]
    for i, (label, run_color, counts) in enumerate(rows):
        y = top + i * (bar_h + 6)
        parts.append(f'<rect x="4" y="{y + 2}" width="9" height="{bar_h - 4}" fill="{run_color}"/>')
        parts.append(
            f'<text x="17" y="{y + 12}" font-size="11"><title>{_esc(label)}</title>'
            f"{_esc(_clip(label, 25))}</text>"
        )
        total = sum(counts.values()) or 1
        x = float(label_w)
        for cls, color in class_colors.items():
            c = counts.get(cls, 0)
            if not c:
                continue
            w = bar_w * c / total
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{color}">'
                f"<title>{_esc(label)}: {_esc(cls)} {c} of {total}</title></rect>"
            )
            if w > 24:
                parts.append(
                    f'<text x="{x + 3:.1f}" y="{y + 12}" font-size="10" fill="#fff">{c}</text>'
                )
            x += w
    parts.append("</svg>")
    return "".join(parts)
