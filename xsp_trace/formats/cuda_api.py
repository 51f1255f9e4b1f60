"""Facts about CUDA / HIP API calls the CPU-time taxonomy uses (queries/lib/sync.sql's
xsp_cpu_calls, read by step_bound, sync_calls, pageable_memcpy and gpu_idle_gaps): which calls make
the CPU wait, and which copies involve pageable host memory.

The taxonomy: every instant of a CPU thread is in one of CPU_TIME_CLASSES --
  launch  inside a call that launched GPU work and returned without waiting for it;
  sync    inside a call that blocks until the GPU (or a copy through a staging buffer) is done:
          explicit synchronisation, synchronous copies / sets, async copies to or from pageable memory;
  host    inside any other recorded span (framework ops, Python, data loading, ranges, other API calls);
  idle    inside no recorded span.

Explicit synchronisation (EXPLICIT_SYNC_API): cudaDeviceSynchronize, cudaStreamSynchronize,
cudaEventSynchronize (the event / stream waits that block the CPU; cudaStreamWaitEvent makes a
stream wait, not the CPU, and cudaStreamQuery / cudaEventQuery return at once); the driver (cu*) and
HIP (hip*) spellings likewise.

Implicit synchronisation (IMPLICIT_SYNC_API; CUDA Programming Guide, "Implicit Synchronization", and
the Runtime API's "API synchronization behavior"): cudaMemcpy / cudaMemset and their 2D/3D/ToSymbol
variants without Async return after the copy; cudaFree / cudaFreeHost / cudaHostRegister /
cudaHostUnregister wait for the device.

Async copies that block (ASYNC_COPY_API with a pageable endpoint, PAGEABLE_KINDS): "for transfers
from device memory to pageable host memory, the function will return only once the copy has
completed" (so after all work queued before it on the stream); from pageable host memory to the
device the call returns once the data is staged into a pinned buffer, which the CPU does itself.
Either way the CPU sits in the call, so its time is sync time, not launch time.

Kineto also records the waits it sees as cuda_sync activities (Stream Sync, Event Sync, Context
Sync): spans of kind sync on the GPU's rows, the GPU-side view of a CPU call already counted.
"""

from __future__ import annotations

# The CPU-time classes, in the order the analyses report them.
CPU_TIME_CLASSES = ("launch", "sync", "host", "idle")

# RE2 / Python patterns on spans.name of kind 'api' (entry-point version suffixes already stripped).
EXPLICIT_SYNC_API = r"^(cuda|cu|hip)(Device|Ctx|Stream|Event)Synchronize$"
IMPLICIT_SYNC_API = r"^(cuda|cu|hip)(Memcpy|Memset)(2D|3D)?(ToSymbol|FromSymbol|HtoD|DtoH|DtoD)?(_v2)?$|^(cuda|cu|hip)(Free|FreeHost|HostRegister|HostUnregister|MemFree|MemFreeHost)(_v2)?$"
# Copy / set calls that return before the GPU is done, unless the host side is pageable
# (cudaMemcpyAsync, cudaMemcpy2DAsync, cuMemcpyDtoHAsync, hipMemcpyAsync, hipMemcpyWithStream ...).
ASYNC_COPY_API = r"^(cuda|cu|hip)(Memcpy|Memset)\w*Async(_v2|_ptsz|_ptds)?$|^hipMemcpyWithStream$"

# Memory kinds of a copy's host side that make it pageable (memops.src_kind / dst_kind), per source:
# nsys's ENUM_CUDA_MEM_KIND label (code 0 in exports without the enum table) and Kineto's memcpy
# name "Memcpy DtoH (Device -> Pageable)" both say "Pageable"; ROCm's Kineto names say "Host",
# which does not tell pageable from pinned, so no ROCm copy is counted.
PAGEABLE_KINDS = {"nsys": ("Pageable",), "kineto": ("Pageable",)}
PAGEABLE = "Pageable"  # the one spelling both sources use (what the SQL compares against)
