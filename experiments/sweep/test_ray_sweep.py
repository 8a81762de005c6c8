"""The Ray runner on a local two-node cluster: it writes the same per-run JSON and the same results.csv,
byte for byte, as `mcfs sim --sweep` does on the same SWEEP.toml, and a failing run is the same failed row
and a non-zero exit there too.

Needs ray (scripts/test-sweep-ray.sh makes a venv with it) and the mcfs binary ($MCFS_BIN, else
target/release/mcfs).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

# No usage reports from Ray: the test talks to this machine only (set before Ray is imported).
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from ray.cluster_utils import Cluster  # noqa: E402  (after the environment it reads)

HERE = Path(__file__).resolve().parent
MCFS = os.environ.get("MCFS_BIN", str(HERE.parents[1] / "target" / "release" / "mcfs"))
RUNNER = HERE / "ray_sweep.py"

SWEEP = """\
traces = ["traces/*"]
devices = ["emmc"]
out = "results"

[configs]
default = {}
sync = { mode = "sync" }
"""


def mcfs(*args):
    return subprocess.run([MCFS, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)


def snapshot(results):
    """The table and every run's file, by name."""
    files = {p.name: p.read_bytes() for p in (results / "runs").iterdir() if not p.name.startswith(".")}
    return (results / "results.csv").read_bytes(), files


class RaySweepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        cls.cluster.add_node(num_cpus=1)
        cls.cluster.wait_for_nodes()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.shutdown()

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="ray-sweep-test."))
        self.addCleanup(shutil.rmtree, self.dir)
        traces = self.dir / "traces"
        traces.mkdir()
        for name, io, seed in [("fb.bin", "fsync-moderate", "2"), ("tw.trace", "fsync-heavy", "1")]:
            out = mcfs("trace", "synth", "--io", io, "--user", "scroller", "--seed", seed, "--duration", "20",
                       "-o", str(traces / name))
            self.assertEqual(out.returncode, 0, out.stderr)
        self.sweep = self.dir / "sweep.toml"
        self.sweep.write_text(SWEEP)
        self.results = self.dir / "results"

    def both_ways(self):
        """Runs the sweep with mcfs, then with the runner on the cluster; returns both outcomes."""
        local = mcfs("sim", "--sweep", str(self.sweep), "--jobs", "2")
        expected = snapshot(self.results)
        shutil.rmtree(self.results)
        ray = subprocess.run(
            [sys.executable, str(RUNNER), str(self.sweep), "--address", self.cluster.address, "--mcfs", MCFS],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        )
        return local, expected, ray, snapshot(self.results)

    def test_same_runs_and_same_table_as_mcfs(self):
        local, expected, ray, got = self.both_ways()
        self.assertEqual(local.returncode, 0, local.stderr)
        self.assertEqual(ray.returncode, 0, ray.stderr)
        table, runs = got
        self.assertEqual(table, expected[0])
        self.assertEqual(runs, expected[1])
        self.assertEqual(sorted(runs), ["fb@default@emmc.json", "fb@sync@emmc.json",
                                        "tw@default@emmc.json", "tw@sync@emmc.json"])
        self.assertEqual(len(table.decode().splitlines()), 5, table)
        self.assertIn("ray-sweep: 4/4 ", ray.stderr)

    def test_a_failing_run_is_the_same_failed_row(self):
        (self.dir / "traces" / "bad.trace").write_text("mcfs-trace 1\n0 a 1 launch\n1 a 1 write /d/f 0\n")
        local, expected, ray, got = self.both_ways()
        self.assertEqual(local.returncode, 1, local.stderr)
        self.assertEqual(ray.returncode, 1, ray.stderr)
        self.assertIn("bad@sync@emmc", ray.stderr)
        self.assertEqual(got, expected)
        rows = [r for r in got[0].decode().splitlines() if r.startswith("bad@")]
        self.assertEqual(len(rows), 2, got[0])
        self.assertTrue(all(",failed," in r and "line 3" in r for r in rows), rows)


if __name__ == "__main__":
    unittest.main()
