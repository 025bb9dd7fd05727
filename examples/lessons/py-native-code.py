# Call the C library directly (examples/lessons.json, written by docs/gen_teaching.py)
# ctypes is never offered by a language preset; under kernel-only native code runs, and seccomp is the wall.
# tidepool run --compare strict,standard,kernel-only examples/lessons/py-native-code.py
import ctypes
libc = ctypes.CDLL(None)
print(libc.syscall(57))  # fork
