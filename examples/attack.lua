-- What a curious student tries first: read a secret file (one attack a file; more in examples/lessons/).
local f = io.open('/etc/passwd')
print(f:read('a'))
