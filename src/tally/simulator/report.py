"""The HTML report of a comparison: one self-contained file, an inline SVG timeline per differing resource.

Each timeline draws two lanes over the month, the oracle's intervals above and the stored ones below,
coloured by state and labelled with state and size; the spans where they differ are shaded (amber
when tolerated, red when off), and each is listed with its verdict: the cause, and for a tolerated
one the correction and the run it rests on. No script, no external asset: the file can
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

from .compare import Comparison, ResourceDiff
from .oracle import Oracle

WIDTH = 960
LANE = 26
LEFT = 70

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


class _Scale:
    def __init__(self, lo: datetime, hi: datetime) -> None:
        self.lo, self.span = lo, max((hi - lo).total_seconds(), 1.0)

    def x(self, at: datetime) -> float:
        seconds = min(max((at - self.lo).total_seconds(), 0.0), self.span)
        return LEFT + (WIDTH - LEFT - 10) * seconds / self.span


def _lane(
    label: str, y: int, spans: Sequence[tuple[datetime, datetime, str, str, Mapping[str, Any]]], scale: _Scale
) -> list[str]:
    out = [f'<text x="4" y="{y + 17}" class="lane">{html.escape(label)}</text>']
    for start, end, state, project, size in spans:
        x0, x1 = scale.x(start), scale.x(end)
        title = html.escape(
            f"{format_instant(start)} .. {format_instant(end)}  {state}  {_size_text(size)}  "
            f"project {project}"
        )
        out.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.8):.1f}" height="{LANE - 4}" '
            f'fill="{_colour(state)}"><title>{title}</title></rect>'
        )
        if x1 - x0 > 60:
            text = html.escape(f"{state} {_size_text(size)}")[: int((x1 - x0) / 6)]
            out.append(f'<text x="{x0 + 3:.1f}" y="{y + 15}" class="bar">{text}</text>')
    return out


def timeline_svg(
    diff: ResourceDiff,
    oracle_intervals: Sequence[tuple[datetime, datetime, str, str, Mapping[str, Any]]],
    stored: Sequence[Interval],
    period_from: datetime,
    period_to: datetime,
) -> str:
    """The two lanes of one resource, and its differences shaded over both."""
    scale = _Scale(period_from, period_to)
    height = 2 * LANE + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img">'
    ]
    for d in diff.differences:
        x0, x1 = scale.x(d.start), scale.x(d.end)
        fill = "#f5b041" if d.tolerated else "#e74c3c"
        parts.append(
            f'<rect x="{x0:.1f}" y="0" width="{max(x1 - x0, 1.5):.1f}" height="{2 * LANE + 4}" fill="{fill}" '
            f'opacity="0.35"><title>{html.escape(", ".join(d.fields))} differ '
            f"{format_instant(d.start)} .. {format_instant(d.end)}</title></rect>"
        )
    parts += _lane("oracle", 2, oracle_intervals, scale)
    stored_spans = [
        (i.start, i.end or period_to, i.state, i.project_id, i.size)
        for i in stored
        if (i.end or period_to) > period_from and i.start < period_to
    ]
    parts += _lane("stored", LANE + 4, stored_spans, scale)
    axis_y = 2 * LANE + 18
    day = period_from
    while day <= period_to:
        x = scale.x(day)
        parts.append(
            f'<line x1="{x:.1f}" y1="{2 * LANE + 6}" x2="{x:.1f}" y2="{2 * LANE + 9}" class="tick"/>'
        )
        if day.day % 5 == 1 or day == period_from:
            parts.append(f'<text x="{x - 8:.1f}" y="{axis_y + 6}" class="axis">{day:%m-%d}</text>')
        day = day.replace(hour=0, minute=0, second=0, microsecond=0)
        day = datetime.fromordinal(day.toordinal() + 1).replace(tzinfo=period_from.tzinfo)
    parts.append("</svg>")
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
