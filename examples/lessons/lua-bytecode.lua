-- Load hand-made bytecode (examples/lessons.json, written by docs/gen_teaching.py)
-- bytecode can corrupt the interpreter, so the language presets refuse string.dump; kernel-only allows it and relies on the kernel.
-- tidepool run --compare strict,standard,kernel-only examples/lessons/lua-bytecode.lua
local f = string.dump(function() return 1 end)
print(#f, load(f, 'x', 'b')())
