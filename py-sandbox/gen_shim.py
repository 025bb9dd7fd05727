"""Regenerates pyshim.c from shim.py: /usr/bin/python3 py-sandbox/gen_shim.py
With --check, writes nothing and fails when pyshim.c is not what shim.py makes."""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'shim.py'), encoding='ascii') as f:
    lines = f.read().splitlines()
out = ['/*', ' * pyshim.c - GENERATED from shim.py by gen_shim.py; edit shim.py instead.', ' */',
       '#include "pyshim.h"', '', 'const char tp_py_shim_source[] =']
out += ['\t' + json.dumps(line + '\n') for line in lines]
out[-1] += ';'
text = '\n'.join(out) + '\n'
target = os.path.join(here, 'pyshim.c')
if sys.argv[1:] == ['--check']:
    with open(target) as f:
        if f.read() != text:
            sys.exit('py-sandbox/pyshim.c is out of date: shim.py changed; run `make py-sandbox/pyshim.c`')
    print('py-sandbox/pyshim.c matches shim.py')
else:
    with open(target, 'w') as f:
        f.write(text)
