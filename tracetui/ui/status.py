"""The status line's fixed part: what is loaded and how well it linked."""

from __future__ import annotations

from rich.text import Text


def trace_summary(linked) -> Text:
    """The fixed part of the status line: files, devices, event counts, GPU launch links,
    ET link statistics and the warning count (``w`` lists them)."""
    kt = linked.kineto
    text = Text(no_wrap=False)
    text.append(linked.title, style="bold")
    if kt is not None:
        devices = sorted({str(d.get("name")) for d in kt.device_properties if isinstance(d, dict) and d.get("name")})
        if devices:
            text.append(" · " + ", ".join(devices))
        counts = kt.kind_counts()
        text.append(f" · {kt.n_events:,} events, {counts.get('kernel', 0):,} kernels")
        g = kt.gpu_stats
        if g.gpu_events:
            text.append(f" · GPU→launch {g.linked:,}/{g.gpu_events:,}")
    if linked.link is not None:
        s = linked.link.stats
        text.append(f" · ET link {s.method}: {s.linked:,}/{s.et_ops:,}")
        if s.heuristic:
            text.append(f" ({s.heuristic:,} heuristic)", style="yellow")
        text.append(f", ET-only {s.et_only:,}")
        if s.suspect_mismatch:
            text.append(" · ET and Kineto look like different runs", style="bold red")
    n_warn = len(linked.all_warnings())
    if n_warn:
        text.append(f" · ⚠ {n_warn} warning{'s' if n_warn != 1 else ''} (w)", style="bold yellow")
    return text
