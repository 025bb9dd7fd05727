# Eat all the memory (examples/lessons.json, written by docs/gen_teaching.py)
# the allocator counts every byte in the language presets; under kernel-only the address-space rlimit stops it.
# tidepool run --compare strict,standard,kernel-only examples/lessons/py-memory-bomb.py
x = []
while True:
    x.append('x' * 1000000)
