# Run a program (examples/lessons.json, written by docs/gen_teaching.py)
# subprocess is not offered; under kernel-only seccomp refuses the first system call a new process needs.
# tidepool run --compare strict,standard,kernel-only examples/lessons/py-run-program.py
import subprocess
subprocess.run(['id'])
