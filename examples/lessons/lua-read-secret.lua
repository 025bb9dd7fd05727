-- Read a secret file (examples/lessons.json, written by docs/gen_teaching.py)
-- io.open is not offered (strict) or reaches only a session's workspace (standard); under kernel-only Landlock refuses the path.
-- tidepool run --compare strict,standard,kernel-only examples/lessons/lua-read-secret.lua
local f = io.open('/etc/passwd')
print(f:read('a'))
