# Walk to every class (examples/lessons.json, written by docs/gen_teaching.py)
# the language layer blocks introspection; kernel-only allows it, because it reaches nothing the kernel would have to refuse.
# tidepool run --compare strict,standard,kernel-only examples/lessons/py-introspection.py
print(len(().__class__.__base__.__subclasses__()))
