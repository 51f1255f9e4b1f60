"""Facts about CUDA / HIP API calls the idle-time analyses use (queries/analyses/sync_calls.sql,
queries/analyses/gpu_idle_gaps.sql, queries/analyses/step_bound.sql): which calls block the CPU until GPU work is
done (launch calls are those with a row in `launches`).

Explicit synchronisation: cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize,
cudaStreamQuery/cudaEventQuery loops are not blocking and not included; the driver (cu*) and HIP
(hip*) spellings likewise. Implicit synchronisation (CUDA Programming Guide, "Implicit
Synchronization" and the API docs' "synchronous" notes): cudaMemcpy / cudaMemset and their 2D/3D/
ToSymbol variants without Async (they return after the copy; from pageable memory even the Async
ones copy synchronously), cudaFree / cudaFreeHost / cudaHostRegister / cudaHostUnregister (they wait
for the device), cudaMalloc of the first allocation aside. Kineto also records the waits it sees
as cuda_sync activities (Stream Sync, Event Sync, Context Sync): spans of kind sync.
"""

from __future__ import annotations

# RE2 / Python patterns on spans.name of kind 'api' (entry-point version suffixes already stripped).
EXPLICIT_SYNC_API = r"^(cuda|cu|hip)(Device|Ctx|Stream|Event)Synchronize$"
IMPLICIT_SYNC_API = r"^(cuda|cu|hip)(Memcpy|Memset)(2D|3D)?(ToSymbol|FromSymbol|HtoD|DtoH|DtoD)?(_v2)?$|^(cuda|cu|hip)(Free|FreeHost|HostRegister|HostUnregister|MemFree|MemFreeHost)(_v2)?$"
# Memory kinds of a copy's host side that make it pageable (memops.src_kind / dst_kind).
PAGEABLE = "Pageable"
