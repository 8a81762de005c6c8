#!/usr/bin/env python3
"""Splits a callgrind profile of the replay bench into the engine's instructions and the simulator's.

Reads an uncompressed callgrind file (`--compress-strings=no --compress-pos=no`) of a build without
link-time optimization, where every call from one crate into another is a real call. The engine's share
is the inclusive cost of every call from the simulator's code into `mcfs_core`, minus the calls the
engine makes back into the simulator's code (the simulated store and device behind the `Backend` trait,
the content patterns). A library frame between the two (a closure called through `core::ops`) is not
seen as a crossing (in the bench's profile no call of the simulator reaches the engine through one, and
the engine's calls back out all go straight to the simulator's code).

Usage: engine_share.py CALLGRIND_FILE EVENTS EVENTS_PER_SECOND
  EVENTS: events the profiled replay ran; EVENTS_PER_SECOND: the optimized bench's measured speed.
"""
import collections
import sys

SIMULATOR_CRATES = {"mcfs_sim", "mcfs_device", "replay_speed"}
ENGINE_CRATE = "mcfs_core"


def crate_of(symbol):
    """The crate of a demangled symbol's own type or function: `<mcfs_sim::X as mcfs_core::T>::f` is mcfs_sim's."""
    return symbol.lstrip("<").split("::", 1)[0]


def read_profile(path):
    """Self cost per function and inclusive cost per call edge (caller, callee)."""
    own = collections.Counter()
    calls = collections.Counter()
    function = callee = None
    call_line_next = False
    with open(path) as f:
        for line in f:
            if line.startswith("fn="):
                function = line[3:].rstrip("\n")
            elif line.startswith("cfn="):
                callee = line[4:].rstrip("\n")
            elif line.startswith("calls="):
                call_line_next = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if len(fields) < 2:
                    continue
                if call_line_next:
                    calls[(function, callee)] += int(fields[1])
                    call_line_next = False
                else:
                    own[function] += int(fields[1])
    return own, calls


def split(own, calls):
    """(total, engine, calls into the engine by callee, calls back out of it by callee)."""
    into_engine = collections.Counter()
    back_out = collections.Counter()
    for (caller, callee), cost in calls.items():
        if crate_of(caller) in SIMULATOR_CRATES and crate_of(callee) == ENGINE_CRATE:
            into_engine[callee] += cost
        elif crate_of(caller) == ENGINE_CRATE and crate_of(callee) in SIMULATOR_CRATES:
            back_out[callee] += cost
    engine = sum(into_engine.values()) - sum(back_out.values())
    return sum(own.values()), engine, into_engine, back_out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    total, engine, into_engine, back_out = split(*read_profile(sys.argv[1]))
    events, speed = int(sys.argv[2]), float(sys.argv[3])
    if engine <= 0 or events == 0:
        sys.exit(f"engine_share.py: {sys.argv[1]} holds no engine instructions of the replay (was --toggle-collect right?)")
    simulator = total - engine
    print(f"replay instructions:  {total:>14,} = {total / events:7,.0f} per event")
    print(f"  engine (mcfs-core): {engine:>14,} = {engine / events:7,.0f} per event ({100 * engine / total:.0f} %)")
    print(f"  simulator:          {simulator:>14,} = {simulator / events:7,.0f} per event ({100 * simulator / total:.0f} %)")
    print("engine entry points, instructions per event:")
    for name, cost in into_engine.most_common(8):
        print(f"  {cost / events:7,.0f}  {name}")
    print("simulator code the engine calls, instructions per event:")
    for name, cost in back_out.most_common(5):
        print(f"  {cost / events:7,.0f}  {name}")
    ceiling = speed * total / engine
    print(f"measured speed {speed / 1e6:.2f} M events/s; with a simulator that cost nothing and the engine's")
    print(f"instructions running at the same rate, at most {ceiling / 1e6:.2f} M events/s")


if __name__ == "__main__":
    main()
