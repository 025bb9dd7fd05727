# Sleep forever (examples/lessons.json, written by docs/gen_teaching.py)
# strict offers no clock; sleeping uses no CPU, so only the host's wall clock ends it.
# tidepool run --compare strict,standard,kernel-only --wall-ms 2000 examples/lessons/py-sleep.py
import time
time.sleep(60)
