# What a curious student tries first: read a secret file, then run a program.
print(open('/etc/passwd').read())
import os
os.system('id')
