"""A script that runs fine but never hands a model to xsp_trace.capture.run."""

print("hello")
