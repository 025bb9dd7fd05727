-- Run a program (examples/lessons.json, written by docs/gen_teaching.py)
-- os.execute is not offered; under kernel-only seccomp traps the clone a new process needs.
-- tidepool run --compare strict,standard,kernel-only examples/lessons/lua-run-program.lua
os.execute('id')
