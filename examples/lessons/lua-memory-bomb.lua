-- Eat all the memory (examples/lessons.json, written by docs/gen_teaching.py)
-- the Lua allocator counts every byte in the language presets; under kernel-only the address-space rlimit stops it.
-- tidepool run --compare strict,standard,kernel-only examples/lessons/lua-memory-bomb.lua
local t = {}
while true do t[#t + 1] = string.rep('x', 1000000) .. #t end
