# Open a network connection (examples/lessons.json, written by docs/gen_teaching.py)
# socket is not offered; under kernel-only seccomp traps socket().
# tidepool run --compare strict,standard,kernel-only examples/lessons/py-network.py
import socket
socket.create_connection(('192.0.2.1', 80), timeout=1)
