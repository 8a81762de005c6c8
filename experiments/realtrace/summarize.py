"""Tables of the real-trace study from its `mcfs sim --json` results (run by run.sh).

    summarize.py RUNS DEVICE  >  summary.md

RUNS holds GROUP/TRACE/CONFIG.json for the configs ext4, mobifs-tpl and mobifs. Per trace: logical data
flushed (bytes flushed minus journal bytes) and simulated energy under ext4-like and mobifs, the mean
checkpoint interval under ext4-like and mobifs-tpl, bytes at risk (time-weighted mean and maximum), and
the mean staleness of a written byte by Little's law (mean bytes at risk x replay length / bytes written:
how long a byte waits, on average, before a checkpoint commits it). Per group: geometric means of the
ratios over the traces where both sides are non-zero, and the mean staleness of each config (a ratio
would divide by ext4-like's near-zero staleness on apps that fsync).
"""

import json
import math
import sys
from pathlib import Path

GROUPS = {
    "phone": "Phone block traces (eBPF CSVs)",
    "strace": "Real programs under strace",
    "live": "Real programs recorded on a live mount",
    "synthetic": "Synthetic suite: ten apps",
}
MIB = 1024 * 1024


def load(path):
    return json.loads(path.read_text()) if path.exists() else None


def logical_flushed(m):
    return m["bytes_flushed"] - m["journal_bytes"]


def mean_interval_s(m):
    apps = m["apps"].values()
    count = sum(a["checkpoint_intervals"] for a in apps)
    total = sum(a["checkpoint_interval_mean_ns"] * a["checkpoint_intervals"] for a in apps)
    return total / count / 1e9 if count else None


def staleness_s(m):
    written = m["bytes_written"]
    return m["bytes_at_risk"]["mean_bytes"] * m["virtual_ns"] / 1e9 / written if written else None


def energy_mj(m):
    return m["device"]["energy"]["total_nj"] / 1e6


def standby_share(m):
    e = m["device"]["energy"]
    return (e["tail_nj"] + e["wakeup_nj"]) / e["total_nj"] if e["total_nj"] else None


def fmt(value, spec):
    return "–" if value is None else format(value, spec)


def ratio(a, b):
    return a / b if a and b else None


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def group_table(name, runs):
    out = [f"### {GROUPS.get(name, name)}", ""]
    out.append(
        "| trace | events | written (MiB) | flushed ext4-like / mobifs (MiB) | less flushed "
        "| energy ext4-like / mobifs (mJ) | mobifs ÷ ext4-like | tail + wake-up share ext4-like / mobifs "
        "| checkpoint interval ext4-like / mobifs-tpl (s) | bytes at risk, mean ext4-like / mobifs (KiB) "
        "| max (KiB) | staleness ext4-like / mobifs (s) |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    flushed_ratios, energy_ratios, interval_ratios, staleness = [], [], [], []
    for trace in sorted(runs):
        ext4, tpl, full = (load(runs[trace] / f"{c}.json") for c in ("ext4", "mobifs-tpl", "mobifs"))
        if not (ext4 and tpl and full):
            out.append(f"| {trace} | (a run is missing) |||||||||||")
            continue
        fe, fm = logical_flushed(ext4), logical_flushed(full)
        ee, em = energy_mj(ext4), energy_mj(full)
        ie, it = mean_interval_s(ext4), mean_interval_s(tpl)
        se, sm = staleness_s(ext4), staleness_s(full)
        flushed_ratios.append(ratio(fm, fe))
        energy_ratios.append(ratio(em, ee))
        interval_ratios.append(ratio(it, ie))
        staleness.append((se, sm))
        less = fmt(100 * (1 - fm / fe) if fe else None, ".1f")
        risk = ext4["bytes_at_risk"], full["bytes_at_risk"]
        share = [fmt(100 * s if s is not None else None, ".0f") for s in (standby_share(ext4), standby_share(full))]
        skipped = ext4["events_skipped"]
        events = f"{ext4['events_replayed']}" + (f" ({skipped} skipped)" if skipped else "")
        out.append(
            f"| {trace} | {events} | {ext4['bytes_written'] / MIB:.2f} | {fe / MIB:.2f} / {fm / MIB:.2f} "
            f"| {less} % | {ee:.1f} / {em:.1f} | {fmt(ratio(em, ee) and 100 * em / ee, '.1f')} % "
            f"| {share[0]} % / {share[1]} % | {fmt(ie, '.1f')} / {fmt(it, '.1f')} "
            f"| {risk[0]['mean_bytes'] / 1024:.0f} / {risk[1]['mean_bytes'] / 1024:.0f} "
            f"| {risk[0]['max_bytes'] / 1024:.0f} / {risk[1]['max_bytes'] / 1024:.0f} "
            f"| {fmt(se, '.1f')} / {fmt(sm, '.1f')} |"
        )
    g = [geomean(r) for r in (flushed_ratios, energy_ratios, interval_ratios)]
    known = [pair for pair in staleness if None not in pair]
    mean_staleness = [sum(pair[i] for pair in known) / len(known) if known else None for i in (0, 1)]
    out += [
        "",
        f"Geometric means over the traces ({len(runs)}): mobifs flushes "
        f"{fmt(g[0] and 100 * (1 - g[0]), '.1f')} % less than ext4-like, uses "
        f"{fmt(g[1] and 100 * g[1], '.1f')} % of its energy; mobifs-tpl's checkpoint interval is "
        f"{fmt(g[2], '.1f')}× ext4-like's; mean staleness {fmt(mean_staleness[0], '.1f')} s under "
        f"ext4-like, {fmt(mean_staleness[1], '.1f')} s under mobifs.",
        "",
    ]
    return out


def main():
    runs_dir, device = Path(sys.argv[1]), sys.argv[2]
    out = [
        f"Simulated device: `{device}`. Configs as in the MobiFS study (experiments/mobifs/configs). "
        "Flushed = logical bytes applied in place (journal bytes left out). Staleness = mean time a "
        "written byte waits for its commit (Little's law: mean bytes at risk × replay length ÷ bytes "
        "written).",
        "",
    ]
    groups = {g.name: g for g in runs_dir.iterdir() if g.is_dir()}
    if "phone" not in groups:
        out += ["### " + GROUPS["phone"], "", "No phone CSVs were given to run.sh: this group awaits them.", ""]
    for name in [g for g in GROUPS if g in groups] + sorted(set(groups) - set(GROUPS)):
        runs = {t.name: t for t in groups[name].iterdir() if t.is_dir()}
        out += group_table(name, runs)
    print("\n".join(out))


if __name__ == "__main__":
    main()
