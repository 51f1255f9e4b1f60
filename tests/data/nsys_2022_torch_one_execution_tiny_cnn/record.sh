#!/bin/sh
# Records one execution of program.py by nsys (NVTX + OS runtime) and torch.profiler at once and
# keeps nsys's SQLite export and the Kineto trace in this folder (nsys 2022.4.2 on PATH, a Python
# with torch and the nvtx package 0.2.11 as $PYTHON). Run from the repository root:
#   PYTHON=/path/to/python PYTHONPATH=. taskset -c 1 sh tests/data/nsys_2022_torch_one_execution_tiny_cnn/record.sh
set -e
here=$(dirname "$0")
nsys profile --trace=nvtx,osrt --sample=none --cpuctxsw=none --force-overwrite=true \
    -o "$here/tiny_cnn_nsys" "${PYTHON:-python3}" "$here/program.py" "$here/tiny_cnn_kineto.json.gz"
nsys export --type sqlite --force-overwrite=true -o "$here/tiny_cnn_nsys.sqlite" "$here/tiny_cnn_nsys.nsys-rep"
rm "$here/tiny_cnn_nsys.nsys-rep"  # the export is what the tests read
