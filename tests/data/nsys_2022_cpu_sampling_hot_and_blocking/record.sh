#!/bin/sh
# Records cpu_sampling.nsys-rep, exports it to cpu_sampling.sqlite and keeps the export in this folder (nsys 2022.4.2 on PATH, a
# Python with the nvtx package as $PYTHON). Run from the repository root:
#   PYTHON=/path/to/python taskset -c 1 sh tests/data/nsys_2022_cpu_sampling_hot_and_blocking/record.sh
# --cpuctxsw=process-tree hangs nsys 2022.4.2 here with any Python program (its agent spins after
# the program exits; /bin/sleep records fine); SCHED_EVENTS are written all the same.
set -e
here=$(dirname "$0")
work=$(mktemp -d)
gcc -O1 -shared -fPIC -o "$work/libxsp_hot.so" "$here/hot_loop.c"
nsys profile --trace=nvtx,osrt --sample=cpu --cpuctxsw=none --force-overwrite=true \
    -o "$here/cpu_sampling" "${PYTHON:-python3}" "$here/program.py" "$work/libxsp_hot.so"
nsys export --type sqlite --force-overwrite=true -o "$here/cpu_sampling.sqlite" "$here/cpu_sampling.nsys-rep"
rm "$here/cpu_sampling.nsys-rep"  # the export is what the tests read
rm -r "$work"
