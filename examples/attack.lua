-- What a curious student tries first: read a secret file, then run a program.
local f = io.open('/etc/passwd')
print(f:read('a'))
os.execute('id')
