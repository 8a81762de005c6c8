#!/bin/sh
# Prints an install-like text trace (docs/BENCHMARKS.md, "Data-less replay with content marks"):
# three directories, then FILES files of 128 MiB (default 480: 60 GiB of distinct pages), one after the other, each created,
# written in 1 MiB pieces 1 ms apart, fsynced and closed; the next file starts 1 ms after the close.
# Usage: install_trace.sh [FILES] > T.txt && mcfs trace convert T.txt T.bin
set -eu
files=${1:-480}
awk -v files="$files" 'BEGIN {
    print "mcfs-trace 1"
    print "0.000000000 installer 1 mkdir /data"
    print "0.000000000 installer 1 mkdir /data/app"
    print "0.000000000 installer 1 mkdir /data/app/pkg"
    ms = 0
    for (f = 0; f < files; f++) {
        path = sprintf("/data/app/pkg/f%03d.apk", f)
        printf "%d.%03d000000 installer 1 create %s\n", ms / 1000, ms % 1000, path; ms++
        for (w = 0; w < 128; w++) {
            printf "%d.%03d000000 installer 1 write %s %d 1048576\n", ms / 1000, ms % 1000, path, w * 1048576; ms++
        }
        printf "%d.%03d000000 installer 1 fsync %s\n", ms / 1000, ms % 1000, path
        printf "%d.%03d000000 installer 1 close %s\n", ms / 1000, ms % 1000, path; ms++
    }
}'
