# What a curious student tries first: read a secret file (one attack a file; more in examples/lessons/).
print(open('/etc/passwd').read())
