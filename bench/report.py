"""Output: the figures table on the terminal, JSON with machine info, PNG charts.

Each suite writes ``<out>/<suite>.json`` (machine, versions, parameters, raw
results, figures) and, when matplotlib is installed (the ``bench`` extra), its
charts as ``<out>/<suite>-*.png``. ``<out>/figures.md`` gathers every figure
row of the run as a Markdown table, ready for docs/benchmarks.md.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from snapstore_cli.settings.values import format_size

console = Console(stderr=True)


@dataclass
class Figure:
    """One reported figure: snapstore's value, the peer's, their ratio and the target."""

    figure: str
    what: str
    snapstore: str
    peer: str
    ratio: float
    target: str = ""
    met: bool | None = None

    @property
    def verdict(self) -> str:
        return "" if self.met is None else "met" if self.met else "MISSED"


def seconds(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def size(value: float | None) -> str:
    return "n/a" if value is None else format_size(int(value))


def times(value: float) -> str:
    """A ratio to three significant digits (0.0203x, 1.07x, 86.9x)."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.3g}x"


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
    except ImportError:
        return None
    return str(getattr(mod, "__version__", None) or getattr(mod, "version", lambda: "?")())


def _command(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=30)
    except OSError:
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine() -> dict[str, Any]:
    """Where and with what the figures were measured."""
    import lmdb
    import zstandard

    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "python": sys.version.split()[0],
        "versions": {
            "snapstore": _version("snapstore"),
            "lmdb": f"{lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))})",
            "zstandard": f"{zstandard.__version__} (zstd {zstandard.ZSTD_VERSION})"
            if hasattr(zstandard, "ZSTD_VERSION")
            else zstandard.__version__,
            "blake3": _version("blake3"),
            "git": _command(["git", "--version"]),
            "restic": _command(["restic", "version"]),
            "matplotlib": _version("matplotlib"),
        },
    }


def write_json(
    out: str,
    suite: str,
    params: dict[str, Any],
    results: dict[str, Any],
    figures: list[Figure],
    started: float,
) -> str:
    path = os.path.join(out, f"{suite}.json")
    document = {
        "suite": suite,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "duration_s": time.time() - started,
        "machine": machine(),
        "params": params,
        "results": results,
        "figures": [asdict(f) for f in figures],
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, default=_jsonable)
        handle.write("\n")
    return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"not JSON: {value!r}")


def table(figures: list[Figure]) -> None:
    grid = Table(title="snapstore benchmark figures", show_lines=False)
    for name in ("figure", "what", "snapstore", "peer", "ratio", "target", "verdict"):
        grid.add_column(name, overflow="fold")
    for f in figures:
        style = "red" if f.met is False else None
        grid.add_row(
            f.figure, f.what, f.snapstore, f.peer, times(f.ratio), f.target, f.verdict, style=style
        )
    Console(width=None if sys.stdout.isatty() else 160).print(grid)


def markdown(out: str, figures: list[Figure]) -> str:
    path = os.path.join(out, "figures.md")
    lines = [
        "| figure | what | snapstore | peer | ratio | target | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {f.figure} | {f.what} | {f.snapstore} | {f.peer} | {times(f.ratio)} | "
        f"{f.target} | {f.verdict} |"
        for f in figures
    ]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


class Charts:
    """PNG charts through matplotlib, or a one-line notice when it is not installed."""

    def __init__(self, out: str):
        self.out = out
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.plt = None
            console.print(
                "[yellow]charts skipped: matplotlib is not installed (pip install -e '.[bench]')[/]"
            )
        else:
            self.plt = plt
        self.written: list[str] = []

    def bars(
        self,
        name: str,
        title: str,
        groups: list[str],
        series: dict[str, list[float]],
        ylabel: str,
        log: bool = False,
    ) -> None:
        """Grouped bars: one group per x label, one bar per series."""
        if self.plt is None:
            return
        fig, ax = self.plt.subplots(figsize=(7, 4), dpi=110)
        width = 0.8 / max(1, len(series))
        for i, (label, values) in enumerate(series.items()):
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(groups))]
            ax.bar(xs, [0 if v is None or math.isnan(v) else v for v in values], width, label=label)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if log:
            ax.set_yscale("log")
        ax.margins(y=0.2)  # room for the legend
        ax.legend(fontsize="small", loc="best")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = os.path.join(self.out, f"{name}.png")
        fig.savefig(path)
        self.plt.close(fig)
        self.written.append(path)
