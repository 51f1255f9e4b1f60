"""Hand-made steps (support/handmade.py) whose critical paths and what-if predictions are worked
out by hand in tests/test_critical_path.py and tests/test_what_if.py: one builder per dependency
kind, shared so the two test files read the same trace."""

from __future__ import annotations

from support.handmade import Run


def sync_step() -> Run:
    """Launches [100,150) -> kernel A [200,600) and [160,170) -> B [700,900) on one stream;
    cudaDeviceSynchronize [180,950) returns 50 ns after B; the step ends at 1000."""
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.gpu("kernel", "A", (100, 150), (200, 600))
    run.gpu("kernel", "B", (160, 170), (700, 900))
    run.span("api", "cudaDeviceSynchronize", 180, 950, category="cuda_runtime")
    return run


def pageable_step() -> Run:
    """cudaMemcpyAsync Device->Pageable [300,800) inside aten::to [290,810): its copy [700,750) runs
    after kernel K [310,700) (launched [200,250)), and the call returns 50 ns after the copy."""
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 1000, iteration=1)
    run.span("op", "aten::to", 290, 810)
    run.gpu("kernel", "K", (200, 250), (310, 700))
    run.memop("memcpy", (300, 800), (700, 750), "DtoH", 4096, src="Device", dst="Pageable")
    return run


def event_step(step_end: int = 1000, b_start: int = 500) -> Run:
    """Kernel A on stream 7 [100,500) (launched [10,20)); cudaEventRecord [30,35) after its launch,
    cudaStreamWaitEvent [40,45) on stream 8 (Kineto's "Stream Wait Event" names the record call);
    kernel B on stream 8, launched at [50,60), starts only once A has ended (at b_start) and runs
    100 ns; cudaDeviceSynchronize [70,650)."""
    run = Run(1, source_kind="kineto")
    run.span("annotation", "ProfilerStep#1", 0, step_end, iteration=1)
    run.gpu("kernel", "A", (10, 20), (100, 500), stream=7)
    run.span("api", "cudaEventRecord", 30, 35, correlation_id=900, category="cuda_runtime")
    run.span("api", "cudaStreamWaitEvent", 40, 45, correlation_id=901, category="cuda_runtime")
    wait = run.span("sync", "Stream Wait Event", 45, 46, device_id=0, stream_id=8, correlation_id=901)
    run.args(wait, {"wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 900})
    run.gpu("kernel", "B", (50, 60), (b_start, b_start + 100), stream=8)
    run.span("api", "cudaDeviceSynchronize", 70, 650, category="cuda_runtime")
    return run


def backward_step(sync_op_start: int) -> Run:
    """The step's thread calls backward ("## backward ##" [300,1800), its own op [300,350), then no
    child) while the autograd thread (tid 101) runs it: MulBackward0 [500,900) launches kernel G
    ([600,620) -> [700,1400)); aten::_local_scalar_dense [sync_op_start,1700) waits in
    cudaStreamSynchronize [sync_op_start + 50,1650) for G. aten::mul [100,200) runs before the
    backward; the callers add what follows (the step's thread resumes at 1800)."""
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 2000, iteration=1)
    run.span("op", "aten::mul", 100, 200)
    run.span("annotation", "## backward ##", 300, 1800)
    run.span("op", "aten::ones_like", 300, 350)
    run.span("op", "MulBackward0", 500, 900, tid=101)
    run.gpu("kernel", "G", (600, 620), (700, 1400), tid=101)
    run.span("op", "aten::_local_scalar_dense", sync_op_start, 1700, tid=101)
    run.span("api", "cudaStreamSynchronize", sync_op_start + 50, 1650, category="cuda_runtime", tid=101)
    return run
