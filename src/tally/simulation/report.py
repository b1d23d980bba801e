"""The HTML report of a comparison: one self-contained file, an inline SVG timeline per differing resource.

Each timeline draws two lanes over the resource's own life, the oracle's intervals above and the
stored ones below, coloured by state, separated at every change and labelled with state and size
where the label fits; a size change within one state is marked with a triangle. The spans where the
lanes differ are shaded (amber when tolerated, red when off) and widened to be seen
(``_timeline_scale``: the axis is cut at each change, so widths are not to scale, and the axis
labels the cuts without overlapping). Each difference is listed with its verdict: the cause, and for
a tolerated one the correction and the run it rests on. No script, no external asset: the file can
be mailed or attached to a ticket as it is.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from tally.core import Interval, format_instant
from tally.simulator.compare import Comparison, ResourceDiff
from tally.simulator.oracle import Oracle

from ._timeline_scale import MIN_DIFF_PX, PiecewiseScale, label_positions

WIDTH = 960
LANE = 26
LEFT = 70
CHAR_PX = 6.2  # the width of a character of the bars' 11 px font, near enough to keep labels inside
AXIS_LABEL_PX = 100.0  # "07-01 06:00:00" at 10 px, and a gap

_STATE_COLOURS = {
    "active": "#4c9a2a",
    "stopped": "#8c8c8c",
    "shelved": "#6a6aa8",
    "shelved_offloaded": "#6a6aa8",
    "deleted": "#333333",
}


def _colour(state: str) -> str:
    if state in _STATE_COLOURS:
        return _STATE_COLOURS[state]
    digest = hashlib.sha256(state.encode()).digest()
    return f"#{digest[0] % 160 + 40:02x}{digest[1] % 160 + 40:02x}{digest[2] % 160 + 40:02x}"


def _size_text(size: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(size.items()))


Span = tuple[datetime, datetime, str, str, Mapping[str, Any]]


def _lane(label: str, y: int, spans: Sequence[Span], scale: PiecewiseScale) -> list[str]:
    out = [f'<text x="4" y="{y + 17}" class="lane">{html.escape(label)}</text>']
    previous: Span | None = None
    for span in sorted(spans, key=lambda s: s[0]):
        start, end, state, project, size = span
        x0, x1 = scale.x(start), scale.x(end)
        title = html.escape(
            f"{format_instant(start)} .. {format_instant(end)}  {state}  {_size_text(size)}  "
            f"project {project}"
        )
        out.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.8):.1f}" height="{LANE - 4}" '
            f'fill="{_colour(state)}" stroke="#fff" stroke-width="1"><title>{title}</title></rect>'
        )
        if previous is not None and previous[2] == state and previous[4] != size:
            out.append(
                f'<path d="M{x0 - 5:.1f},{y - 1} L{x0 + 5:.1f},{y - 1} L{x0:.1f},{y + 6} Z" class="resize">'
                f"<title>size {html.escape(_size_text(previous[4]))} to {html.escape(_size_text(size))} "
                f"at {format_instant(start)}</title></path>"
            )
        fits = int((x1 - x0 - 6) / CHAR_PX)
        if fits >= 4:
            text = f"{state} {_size_text(size)}"
            shown = text if len(text) <= fits else text[: fits - 1] + "…"
            out.append(f'<text x="{x0 + 3:.1f}" y="{y + 15}" class="bar">{html.escape(shown)}</text>')
        previous = span
    return out


def _axis(scale: PiecewiseScale, y: int) -> list[str]:
    xs = list(scale.xs)
    out = [f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 3}" class="tick"/>' for x in xs]
    same_day = scale.lo.date() == scale.hi.date()
    for i in label_positions(xs, label_px=AXIS_LABEL_PX):
        at = scale.breaks[i]
        text = f"{at:%H:%M:%S}" if same_day else f"{at:%m-%d %H:%M:%S}"
        anchor = "start" if i == 0 else "end" if i == len(xs) - 1 else "middle"
        out.append(f'<text x="{xs[i]:.1f}" y="{y + 14}" text-anchor="{anchor}" class="axis">{text}</text>')
    return out


def timeline_svg(
    diff: ResourceDiff,
    oracle_intervals: Sequence[Span],
    stored: Sequence[Interval],
    period_from: datetime,
    period_to: datetime,
) -> str:
    """The two lanes of one resource over its life, and its differences shaded and widened over both."""

    def clip(at: datetime) -> datetime:
        return min(max(at, period_from), period_to)

    stored_spans = [
        (clip(i.start), clip(i.end or period_to), i.state, i.project_id, i.size)
        for i in stored
        if (i.end or period_to) > period_from and i.start < period_to
    ]
    oracle_spans = [(clip(a), clip(b), st, pr, sz) for a, b, st, pr, sz in oracle_intervals]
    boundaries = {t for span in (*oracle_spans, *stored_spans) for t in span[:2]}
    differing = [(clip(d.start), clip(d.end)) for d in diff.differences]
    scale = PiecewiseScale.build(boundaries, differing, left=LEFT, width=WIDTH - LEFT - 12)
    height = 2 * LANE + 34
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img">'
    ]
    parts += _lane("oracle", 8, oracle_spans, scale)
    parts += _lane("stored", LANE + 10, stored_spans, scale)
    for d, (start, end) in zip(diff.differences, differing, strict=True):
        x0, x1 = scale.x(start), scale.x(end)
        fill = "#f5b041" if d.tolerated else "#e74c3c"
        parts.append(
            f'<rect x="{x0:.1f}" y="4" width="{max(x1 - x0, 2.0):.1f}" height="{2 * LANE + 6}" fill="{fill}" '
            f'fill-opacity="0.45" stroke="{fill}" stroke-width="2"><title>{html.escape(", ".join(d.fields))} '
            f"differ {format_instant(d.start)} .. {format_instant(d.end)}</title></rect>"
        )
    parts += _axis(scale, 2 * LANE + 12)
    parts.append("</svg>")
    parts.append(
        '<p class="note">The axis is cut at every change and each differing span is widened to at least '
        f"{MIN_DIFF_PX:g} px: widths are not to scale; hover a bar or a span for its instants.</p>"
    )
    return "".join(parts)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
.pass { color: #2e7d32; } .fail { color: #c62828; }
section { margin: 1.5em 0; } code { font-size: 0.9em; }
svg text.lane { font-size: 12px; } svg text.bar { font-size: 11px; fill: #fff; }
svg text.axis { font-size: 10px; fill: #555; } svg line.tick { stroke: #555; }
svg path.resize { fill: #111; } p.note { font-size: 0.8em; color: #666; margin-top: 0; }
"""


def _causes_table(comparison: Comparison) -> list[str]:
    out = ["<h2>Verdicts by cause</h2><table><tr><th>verdict</th><th>cause</th><th>count</th></tr>"]
    for verdict, counts in (("tolerated", comparison.tolerated_by_cause), ("off", comparison.off_by_cause)):
        out += [
            f"<tr><td>{verdict}</td><td>{html.escape(cause)}</td><td>{n:,}</td></tr>"
            for cause, n in counts.items()
        ]
    out.append("</table>")
    return out


def _quantities_table(comparison: Comparison) -> list[str]:
    out = [
        "<h2>Quantity-weighted error</h2><table><tr><th>type</th><th>member</th><th>unit</th>"
        "<th>oracle</th><th>stored</th><th>signed</th><th>absolute</th></tr>"
    ]
    for (rtype, member, unit), line in sorted(comparison.quantities.items()):
        out.append(
            f"<tr><td>{html.escape(rtype)}</td><td>{html.escape(member or '-')}</td>"
            f"<td>{html.escape(unit)}</td>"
            f"<td>{line.oracle:,.2f}</td><td>{line.stored:,.2f}</td><td>{line.signed:+,.2f}</td>"
            f"<td>{line.absolute:,.2f}</td></tr>"
        )
    out.append("</table>")
    return out


def render_report(
    comparison: Comparison,
    oracle: Oracle,
    stored: Mapping[tuple[str, str], Sequence[Interval]],
    *,
    title: str,
    summary: Sequence[tuple[str, str]] = (),
) -> str:
    """The whole HTML document."""
    verdict = "passed" if comparison.passed else "FAILED"
    out = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>',
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="{"pass" if comparison.passed else "fail"}"><strong>Comparison {verdict}</strong>: '
        f"{comparison.exact} resources exact, {comparison.tolerated} tolerated (corrections dated at the "
        f"poll of the first of {comparison.runs} sync runs that could book them, settle "
        f"{comparison.settle.total_seconds():g} s), {comparison.off} off.</p>",
    ]
    if summary:
        out.append("<table>")
        out += [f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in summary]
        out.append("</table>")
    out.append(
        "<h2>Billed resource-seconds</h2><table><tr><th>type</th><th>oracle</th><th>stored</th>"
        "<th>off</th></tr>"
    )
    for rtype in sorted(set(comparison.oracle_seconds) | set(comparison.stored_seconds)):
        o, s = comparison.oracle_seconds.get(rtype, 0.0), comparison.stored_seconds.get(rtype, 0.0)
        out.append(
            f"<tr><td>{html.escape(rtype)}</td><td>{o:,.0f}</td><td>{s:,.0f}</td><td>{s - o:+,.0f}</td></tr>"
        )
    out.append("</table>")
    out += _causes_table(comparison)
    out += _quantities_table(comparison)
    by_key = {(r.resource_type, r.resource_id): r for r in oracle.resources}
    out.append(f"<h2>Resources that differ ({len(comparison.resources)})</h2>")
    if not comparison.resources:
        out.append("<p>None: every resource's stored lifecycle equals the oracle's.</p>")
    for diff in comparison.resources:
        key = (diff.resource_type, diff.resource_id)
        expected = by_key.get(key)
        oracle_spans = (
            [(i.start, i.end, i.state, i.project_id, i.size) for i in expected.intervals] if expected else []
        )
        status = "tolerated" if diff.tolerated else "off"
        faults = ", ".join(expected.faults) if expected and expected.faults else "none"
        out.append(
            f"<section><h3>{html.escape(diff.resource_type)} <code>{html.escape(diff.resource_id)}</code> "
            f'<span class="{"pass" if diff.tolerated else "fail"}">{status}</span></h3>'
            f"<p>faults: {html.escape(faults)}; billed seconds oracle {diff.oracle_seconds:,.0f}, stored "
            f"{diff.stored_seconds:,.0f}</p>"
        )
        out.append(
            timeline_svg(diff, oracle_spans, stored.get(key, ()), oracle.period_from, oracle.period_to)
        )
        out.append("<ul>")
        for d in diff.differences:
            out.append(
                f"<li>{format_instant(d.start)} .. {format_instant(d.end)}: "
                f"{html.escape(', '.join(d.fields))} differ ({html.escape(d.note())})</li>"
            )
        out.append("</ul></section>")
    out.append("</body></html>")
    return "\n".join(out)


def write_report(path: Path, document: str) -> None:
    """Write whole or not at all."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(document, encoding="utf-8")
    tmp.replace(path)
