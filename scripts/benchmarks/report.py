"""The results table (printed) and docs/benchmarks.md (generated part between markers; notes kept)."""
from __future__ import annotations

import os
import platform as host
from collections import Counter
from dataclasses import dataclass

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


@dataclass
class Row:
    figure: str
    platform: str
    baseline: str
    relation: str  # ratio or added amount
    target: str
    met: bool | None  # None: no target


def fmt(value: float | None, unit: str = "", digits: int = 1) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


def table(rows: list[Row]) -> list[str]:
    head = ["Figure", "Platform", "Baseline", "Ratio / added", "Target", "Met"]
    body = [[r.figure, r.platform, r.baseline, r.relation, r.target, "-" if r.met is None else "yes" if r.met else "NO"]
            for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in body]
    return lines


def machine() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu or host.machine()}), Python {host.python_version()}, {host.system()} {host.release()}"


# Frames where a thread waits rather than works (py-spy samples them as busy): an executor thread
# waiting for work, the IOLoop waiting in epoll. Left out so the percentages are of busy time.
IDLE_FRAMES = ("_worker (concurrent/futures/thread.py:81)", "EpollSelector.select (selectors.py")


def _function(frame: str) -> str:
    """`name (file:line)` -> `name (file)`: one entry per function however many lines were sampled."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})" if where else frame


def profile_summary(raw_path: str, top: int = 15) -> list[str]:
    """Top functions by own (self) samples and by inclusive samples, from py-spy's raw collapsed stacks,
    as shares of the busy samples (idle waits left out)."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = idle = 0
    try:
        with open(raw_path) as fh:
            for line in fh:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not count.isdigit():
                    continue
                n = int(count)
                frames = stack.split(";")
                if frames[-1].startswith(IDLE_FRAMES):
                    idle += n
                    continue
                total += n
                own[frames[-1]] += n
                for f in {_function(f) for f in frames}:
                    inclusive[f] += n
    except OSError:
        return ["(no profile written)"]
    if not total:
        return ["(no samples)"]
    out = [f"{total} busy samples ({idle} idle left out)", "", "Own time:", ""]
    out += [f"    {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    out += ["", "Inclusive (platform_server frames):", ""]
    ours = [(f, n) for f, n in inclusive.most_common() if "platform_server" in f][:top + 5]
    out += [f"    {100 * n / total:5.1f}%  {f}" for f, n in ours]
    return out


def write_markdown(path: str, rows: list[Row], context: list[str], profiles: dict[str, list[str]]) -> None:
    """Replace the generated part of docs/benchmarks.md, keeping anything written outside the markers."""
    generated = [BEGIN, "", "## Latest run", ""] + [f"- {c}" for c in context] + [""] + table(rows) + [""]
    for name, lines in profiles.items():
        generated += [f"### Profile: {name}", ""] + ["```"] + lines + ["```", ""]
    generated.append(END)
    before, after = "# Benchmarks\n\nProduced by `scripts/bench`; every figure is measured in the same run as its baseline.\n\n", "\n"
    if os.path.exists(path):
        with open(path) as fh:
            text = fh.read()
        if BEGIN in text and END in text:
            before = text[: text.index(BEGIN)]
            after = text[text.index(END) + len(END):]
    with open(path, "w") as fh:
        fh.write(before + "\n".join(generated) + after)
