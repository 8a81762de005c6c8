#!/usr/bin/env python3
"""Runs an `mcfs sim --sweep` sweep on a Ray cluster: the same runs, the same per-run files, the same table.

    ray_sweep.py SWEEP.toml [--address ADDR] [--num-cpus N] [--mcfs PATH]

The run list comes from `mcfs sim --sweep SWEEP.toml --list` (so keys and order are mcfs's own); each
run is one Ray task that calls `mcfs sim --sweep SWEEP.toml --only KEY` and returns the file that run
left in the runs directory (`KEY.json`, its metrics, or `KEY.error`), which the driver writes into its
own runs directory; the driver then builds `results.csv` with `mcfs sim --sweep SWEEP.toml --table-only`,
the table writer `mcfs sim --sweep` uses, and exits with its status (non-zero, naming the runs, when a
run failed). See docs/SWEEP.md.

Without --address, ray.init() starts a local cluster (--num-cpus CPUs, default all); with it, the driver
joins that cluster. Every node must see the mcfs binary, SWEEP.toml and the traces at the same paths
(a shared file system); the results only need to reach the driver. No plots: mcfs's report charts are
those of its studies (`mcfs report --mobifs`), with fixed config names, and none fits a general sweep.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import ray

REPO = Path(__file__).resolve().parents[2]


def run_one(mcfs, sweep, key, runs_dir):
    """Runs one run with mcfs and returns (key, file name, text of the file the run left)."""
    done = subprocess.run(
        [mcfs, "sim", "--sweep", sweep, "--only", key],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    # Success leaves KEY.json; a failed run, KEY.error, unless mcfs could not even write it (or start):
    # then the run's error is what mcfs said.
    name = f"{key}.json" if done.returncode == 0 else f"{key}.error"
    path = Path(runs_dir, name)
    if path.exists():
        return key, name, path.read_text()
    said = " ".join(done.stderr.split()) or f"mcfs exited with status {done.returncode}"
    return key, f"{key}.error", said + "\n"


def write_record(runs_dir, key, name, text):
    """Writes a run's file whole and removes the other kind, as mcfs does (one of the two per key)."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = runs_dir / f".{key}.tmp"
    tmp.write_text(text)
    os.replace(tmp, runs_dir / name)
    for other in (f"{key}.json", f"{key}.error"):
        if other != name:
            (runs_dir / other).unlink(missing_ok=True)


def mcfs_output(args):
    """stdout of an mcfs command; its stderr passes through, a failure ends the runner with its status."""
    done = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, check=False, text=True)
    if done.returncode != 0:
        sys.exit(done.returncode)
    return done.stdout


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("sweep", help="the SWEEP.toml (docs/SWEEP.md)")
    parser.add_argument("--address", help="join this Ray cluster (default: start a local one)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local cluster (default: all)")
    parser.add_argument(
        "--mcfs",
        default=os.environ.get("MCFS_BIN", str(REPO / "target" / "release" / "mcfs")),
        help="the mcfs binary, at the same path on every node (default: $MCFS_BIN, else target/release/mcfs)",
    )
    args = parser.parse_args(argv)
    if args.address and args.num_cpus:
        parser.error("--num-cpus sizes a local cluster; a cluster joined with --address has its own")
    if not os.access(args.mcfs, os.X_OK):
        parser.error(f"{args.mcfs} is not an executable (cargo build --release -p mcfs, or give --mcfs)")
    return args


def main(argv):
    args = parse_args(argv)
    mcfs = os.path.abspath(args.mcfs)
    sweep = os.path.abspath(args.sweep)
    listing = json.loads(mcfs_output([mcfs, "sim", "--sweep", sweep, "--list"]))
    runs_dir = Path(listing["runs_dir"])
    keys = [run["key"] for run in listing["runs"]]

    if args.address:
        ray.init(address=args.address, include_dashboard=False)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    try:
        task = ray.remote(num_cpus=1)(run_one)
        key_of = {task.remote(mcfs, sweep, key, str(runs_dir)): key for key in keys}
        pending = list(key_of)
        done = 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            key = key_of[ready[0]]
            try:
                _, name, text = ray.get(ready[0])
            except ray.exceptions.RayError as e:
                # The task itself failed (its worker or node died): a failed run, not the end of the sweep.
                name, text = f"{key}.error", "ray: " + " ".join(str(e).split()) + "\n"
            write_record(runs_dir, key, name, text)
            done += 1
            status = "ok" if name.endswith(".json") else "failed: " + text.strip()
            print(f"ray-sweep: {done}/{len(keys)} {key} {status}", file=sys.stderr, flush=True)
    finally:
        ray.shutdown()
    table = subprocess.run([mcfs, "sim", "--sweep", sweep, "--table-only"], stdin=subprocess.DEVNULL, check=False)
    return table.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
