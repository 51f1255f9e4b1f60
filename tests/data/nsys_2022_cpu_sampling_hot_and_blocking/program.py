"""A CPU program with known causes, recorded under nsys with CPU sampling and thread scheduling.

Each of STEPS steps (NVTX ranges ProfilerStep#N) spends about HOT_MS in one C function,
xsp_hot_spin (libxsp_hot.so, compiled from hot_loop.c by record.sh), then sleeps SLEEP_MS
(time.sleep: a blocking OS call, the thread descheduled) and blocks in a read of a pipe that a
second thread writes to after WRITE_DELAY_MS.
"""

import ctypes
import os
import sys
import threading
import time

import nvtx

STEPS = 6
HOT_ITERATIONS = 20_000_000
SLEEP_MS = 30
WRITE_DELAY_MS = 20

hot = ctypes.CDLL(sys.argv[1])
hot.xsp_hot_spin.argtypes = [ctypes.c_uint64]
hot.xsp_hot_spin.restype = ctypes.c_uint64


def late_write(fd: int) -> None:
    time.sleep(WRITE_DELAY_MS / 1000)
    os.write(fd, b"x")


for step in range(STEPS):
    with nvtx.annotate(f"ProfilerStep#{step}"):
        with nvtx.annotate("hot"):
            hot.xsp_hot_spin(HOT_ITERATIONS)
        with nvtx.annotate("sleep"):
            time.sleep(SLEEP_MS / 1000)
        reader, writer = os.pipe()
        thread = threading.Thread(target=late_write, args=(writer,))
        thread.start()
        with nvtx.annotate("blocking read"):
            os.read(reader, 1)
        thread.join()
        os.close(reader)
        os.close(writer)
