#!/usr/bin/env bash
# Tests the Ray runner of sweeps (experiments/sweep/ray_sweep.py) on a local two-node Ray cluster:
# makes a Python venv under target/ with Ray from PyPI (pinned below), then runs
# experiments/sweep/test_ray_sweep.py against an mcfs binary.
#
#   scripts/test-sweep-ray.sh [MCFS]   MCFS: the mcfs binary to test (default: $MCFS_BIN, else
#                                      target/release/mcfs, built if missing)
#
# Installs python3-venv with apt if missing (needs root or sudo). The venv is kept between runs; a
# venv with another Ray version is reinstalled.
set -euo pipefail

RAY_VERSION=2.60.0
# python3-venv: `python3 -m venv` (Debian splits it from python3).
PACKAGES=(python3-venv)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
venv=$target/sweep-ray-venv
mcfs=${1:-${MCFS_BIN:-$target/release/mcfs}}
case "$mcfs" in -h | --help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

SCRIPT_NAME=test-sweep-ray.sh
# shellcheck source=lib/packages.sh
source "$repo/scripts/lib/packages.sh"

install_packages
if [ ! -x "$mcfs" ]; then
    say "building mcfs (release)"
    (cd "$repo" && cargo build --release -q -p mcfs)
fi
[ -x "$mcfs" ] || { echo "$SCRIPT_NAME: $mcfs is not an executable" >&2; exit 1; }
mcfs=$(realpath "$mcfs")

if ! "$venv/bin/python" -c "import ray, sys; sys.exit(ray.__version__ != '$RAY_VERSION')" 2>/dev/null; then
    say "making $venv with ray==$RAY_VERSION"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "ray==$RAY_VERSION"
fi

say "Ray runner test (local two-node cluster) with $mcfs"
# No usage reports from Ray: the test talks to this machine only.
cd "$repo/experiments/sweep"
RAY_USAGE_STATS_ENABLED=0 MCFS_BIN=$mcfs "$venv/bin/python" -m unittest -v test_ray_sweep
