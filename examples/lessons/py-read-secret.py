# Read a secret file (examples/lessons.json, written by docs/gen_teaching.py)
# strict has no open(); standard's open() reaches only a session's workspace; with the language layer off, Landlock refuses the path.
# tidepool run --compare strict,standard,kernel-only examples/lessons/py-read-secret.py
print(open('/etc/passwd').read())
