-- Spin forever (examples/lessons.json, written by docs/gen_teaching.py)
-- strict counts instructions; standard's CPU timer stops it in the interpreter; under kernel-only the kernel's CPU limit does.
-- tidepool run --compare strict,standard,kernel-only --cpu-ms 1000 examples/lessons/lua-busy-loop.lua
while true do end
