"""Facts about GPU communication the communication analyses use (queries/analyses/comm_*.sql,
queries/analyses/nccl_collectives.sql, queries/analyses/rank_skew.sql): which GPU work is communication, how
collectives are named in traces, element sizes of the dtypes traces name, and nccl-tests' bus
bandwidth factors.

Kernel classes follow Holistic Trace Analysis 0.5 (hta/utils/utils.py), so the compute /
communication split and overlap compare with its get_gpu_kernel_breakdown and
get_comm_comp_overlap: communication = a kernel whose name matches ``^nccl.*Kernel`` (NCCL and
RCCL); memory = memcpy / memset (HTA: names starting Memcpy, Memset, dma); computation = any
other kernel except those whose name contains "Memcpy" or "Sync" or starts with "Memset" (HTA
calls those "other" and leaves them out).
"""

from __future__ import annotations

# RE2 / Python regular expressions, matched with search semantics (hence the anchors).
COMM_KERNEL_PATTERN = r"^nccl.*Kernel"
NOT_COMPUTE_KERNEL_PATTERN = r"(Memcpy)|(^Memset)|(Sync)"

# Span args of collectives (PyTorch record_param_comms, copied by Kineto onto the NCCL kernel
# since 2023; older traces carry Input Dims / Input type on the nccl:<collective> range).
ARG_COLLECTIVE = "Collective name"
ARG_IN_NELEMS = "In msg nelems"
ARG_OUT_NELEMS = "Out msg nelems"
ARG_DTYPE = "dtype"
ARG_GROUP_SIZE = "Group size"

# Collective names as traces write them (args "Collective name", NCCL kernel names
# ncclKernel_<Name>_..., ncclDevKernel_<Name>_..., nccl:<name> ranges), keyed by the name lower-cased
# with everything but letters removed -> the nccl-tests collective.
COLLECTIVES = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "allgatherbase": "all_gather",
    "allgatherintocoalesced": "all_gather",
    "reducescatter": "reduce_scatter",
    "reducescatterbase": "reduce_scatter",
    "reducescattertensorcoalesced": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "all_to_all",
    "alltoallbase": "all_to_all",
    "sendrecv": "send_recv",
    "send": "send_recv",
    "recv": "send_recv",
    "gather": "gather",
    "scatter": "scatter",
}
# Patterns whose group 1 names the collective: the range PyTorch wraps around a collective
# (nccl:all_to_all -- more telling than the kernel: all_to_all runs as SendRecv kernels), and the
# kernel name.
COLLECTIVE_FROM_RANGE = r"^nccl:([A-Za-z_]+)"
COLLECTIVE_FROM_KERNEL = r"^nccl(?:Dev)?Kernel_([A-Za-z]+)"

# nccl-tests (doc/PERFORMANCE.md) bus bandwidth = algorithm bandwidth x factor, factor =
# scale * (n - offset) / n for n ranks: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
# all_to_all (n-1)/n; broadcast, reduce, send/recv, gather, scatter 1. Algorithm bandwidth =
# message bytes / time, the message being the larger of the input and output buffers (all_gather:
# the gathered output; reduce_scatter: the input).
BUSBW_FACTORS = {  # collective -> (scale, offset)
    "all_reduce": (2, 1),
    "all_gather": (1, 1),
    "reduce_scatter": (1, 1),
    "all_to_all": (1, 1),
    "broadcast": (1, 0),
    "reduce": (1, 0),
    "send_recv": (1, 0),
    "gather": (1, 0),
    "scatter": (1, 0),
}

# Bytes per element of the dtypes collectives name (PyTorch ScalarType names in "dtype", C++ type
# names in "Input type"), keyed lower-case.
# Bytes per element by dtype name: the one table is xsp_trace/formats/torch_dtypes.py.
