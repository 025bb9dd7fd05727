-- Reach the registry (examples/lessons.json, written by docs/gen_teaching.py)
-- the debug library reaches every value; kernel-only offers it, and the kernel still holds.
-- tidepool run --compare strict,standard,kernel-only examples/lessons/lua-debug.lua
print(type(debug.getregistry()))
