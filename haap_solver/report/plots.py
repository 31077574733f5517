"""The figures: the benchmark's plots (throughput by method, search time against cluster size)
and a plan's drawings (pipeline Gantt chart, per-stage memory against capacity). matplotlib is
imported lazily, with the Agg backend; without it, `_pyplot` says how to install it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from haap_solver.errors import HaapError
from haap_solver.instance import Instance


def bench_plots(rows: list[dict[str, Any]], instances: list[Instance],
                img: Path) -> dict[str, Path]:
    """Throughput by method per instance; search time against cluster size (log-log)."""
    try:
        plt = _pyplot()
    except HaapError:
        return {}
    img.mkdir(parents=True, exist_ok=True)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    names = [i.name for i in instances]
    by = {(r["instance"], r["method"]): r for r in rows}
    out: dict[str, Path] = {}

    # Throughput relative to uniform, per instance (absolute tokens/s span five decades).
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(names) + 3), 4.8))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        xs, ys = [], []
        for i, n in enumerate(names):
            r = by.get((n, m))
            if r and math.isfinite(r.get("speedup_vs_uniform", math.nan)):
                xs.append(i + (j - (len(methods) - 1) / 2) * width)
                ys.append(r["speedup_vs_uniform"])
        ax.bar(xs, ys, width=width, label=m)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("throughput / uniform (Megatron) throughput")
    ax.set_title("Throughput by method, relative to the best uniform grid")
    ax.legend(fontsize=8, ncol=len(methods))
    fig.tight_layout()
    out["throughput"] = img / "bench-throughput.png"
    fig.savefig(out["throughput"], dpi=120)
    plt.close(fig)

    # Search time against cluster size, log-log.
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for m in methods:
        pts = sorted((r["gpus"], r["search_s"]) for r in rows
                     if r["method"] == m and r["status"] not in ("skipped",))
        if pts:
            ax.loglog([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], "o-", label=m,
                      alpha=0.8)
    ax.set_xlabel("GPUs in the cluster")
    ax.set_ylabel("search time, s")
    ax.set_title("Search time against cluster size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out["search_time"] = img / "bench-search-time.png"
    fig.savefig(out["search_time"], dpi=120)
    plt.close(fig)
    return out


# -- plot ----------------------------------------------------------------------------------------
def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise HaapError("plots need matplotlib: pip install 'haap_solver[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def schedule_events(plan: Any, ev: Any, micro_batches: int, *, blocking: bool = False,
                    link_waits: int = 1) -> list[tuple[int, int, str, float, float]]:
    """(stage, micro-batch, 'F' or 'B', start, end) of a simulated pipeline schedule.

    Each stage runs its forwards and backwards in schedule order (1F1B: p - i warm-up forwards,
    then alternate; GPipe: all forwards, then all backwards); an operation starts when its stage is
    free and its input has arrived over the link (forward from the previous stage, backward from
    the next), with each stage's forward / backward time and each link's p2p time from evaluate().
    With `blocking` sends (training.pipeline_p2p) a stage is also busy while it sends each
    output, so per micro-batch it is busy for tau_i + w (c_{i-1} + c_i), the period of
    docs/cost-model.md Sec. 7 (w = `link_waits`, 2 under DeepSpeed's pipeline engine: its
    receive and its send on a link are two blocking operations); overlapped, sends take no time
    of the stage's. (Interleaved 1F1B
    is drawn as plain 1F1B.)
    """
    p = len(ev.stages)
    m = micro_batches
    fwd = [s.fwd_s for s in ev.stages]
    bwd = [s.bwd_s for s in ev.stages]
    link = [s.p2p_next_s for s in ev.stages]
    orders: list[list[tuple[str, int]]] = []
    for i in range(p):
        if plan.schedule == "gpipe":
            orders.append([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
            continue
        warm = min(p - i, m)
        seq = [("F", j) for j in range(warm)]
        nf, nb = warm, 0
        while nb < m:
            seq.append(("B", nb))
            nb += 1
            if nf < m:
                seq.append(("F", nf))
                nf += 1
        orders.append(seq)
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    pos = [0] * p
    events = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                kind, j = orders[i][pos[i]]
                if kind == "F":
                    dep = 0.0 if i == 0 else done.get(("F", i - 1, j))
                    if dep is not None and i > 0:
                        dep += link[i - 1]
                else:
                    dep = done.get(("F", i, j)) if i == p - 1 else done.get(("B", i + 1, j))
                    if dep is not None and i < p - 1:
                        dep += link[i]
                if dep is None:
                    break
                start = max(free[i], dep)
                end = start + (fwd[i] if kind == "F" else bwd[i])
                done[(kind, i, j)] = end
                free[i] = end
                if blocking:  # the send of this output (the forward's onward, the backward's back)
                    free[i] += link_waits * ((link[i] if i < p - 1 else 0.0) if kind == "F"
                                             else (link[i - 1] if i > 0 else 0.0))
                events.append((i, j, kind, start, end))
                pos[i] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise HaapError("internal error: pipeline schedule deadlocked")
    return events


def plot_gantt(instance: Instance, plan: Any, ev: Any, path: Path, *,
               micro_batches: int | None = None) -> None:
    plt = _pyplot()
    m = micro_batches or min(plan.num_micro_batches, 32)
    m = min(m, plan.num_micro_batches)
    events = schedule_events(plan, ev, m,
                             blocking=instance.training.blocks_p2p(plan.schedule),
                             link_waits=instance.training.link_waits(plan.schedule))
    p = len(ev.stages)
    cmap = plt.get_cmap("tab20")
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.55 * p))
    for i, j, kind, start, end in events:
        color = cmap((2 * (j % 10)) + (1 if kind == "B" else 0))
        ax.barh(i, end - start, left=start, height=0.8, color=color,
                edgecolor="black", linewidth=0.3, hatch="//" if kind == "B" else None)
        if end - start > 0.02 * max(e[4] for e in events):
            ax.text((start + end) / 2, i, f"{kind}{j}", ha="center", va="center", fontsize=6)
    labels = []
    for k, st in enumerate(plan.stages):
        devs = "+".join(f"{r.count}x{r.device}/tp{r.tp}" for r in st.replicas)
        labels.append(f"stage {k}: {st.num_layers} layers\n{devs}")
    ax.set_yticks(range(p))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time, s")
    shown = f"{m} micro-batches" if m == plan.num_micro_batches else \
        f"first {m} of {plan.num_micro_batches} micro-batches"
    ax.set_title(f"{instance.name}: {plan.schedule} schedule, {shown}; "
                 "F = forward, B = backward (hatched)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_memory(instance: Instance, plan: Any, ev: Any, path: Path) -> None:
    plt = _pyplot()
    kinds = ("weights", "grads", "optimizer", "activations", "extras", "reserved")
    bars = []
    for k, sr in enumerate(ev.stages):
        for r in sr.replicas:
            g = r.memory.as_gib()
            bars.append((f"s{k} {r.device}\ntp{r.tp} x{r.count}", g))
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(bars) + 2), 4.8))
    xs = range(len(bars))
    bottom = [0.0] * len(bars)
    for kind in kinds:
        vals = [b[1][f"{kind}_gib"] for b in bars]
        ax.bar(xs, vals, bottom=bottom, label=kind)
        bottom = [a + v for a, v in zip(bottom, vals, strict=True)]
    for x, (_, g) in zip(xs, bars, strict=True):
        ax.hlines(g["capacity_gib"], x - 0.45, x + 0.45, colors="black", linewidth=2)
    ax.plot([], [], color="black", linewidth=2, label="capacity")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars], fontsize=7)
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"{instance.name}\npeak memory per GPU of each stage's replicas, by kind",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
