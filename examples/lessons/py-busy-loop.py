# Spin forever (examples/lessons.json, written by docs/gen_teaching.py)
# strict counts instructions (deterministic); standard's CPU timer stops it in the interpreter; under kernel-only the kernel's CPU limit does.
# tidepool run --compare strict,standard,kernel-only --cpu-ms 1000 examples/lessons/py-busy-loop.py
while True:
    pass
