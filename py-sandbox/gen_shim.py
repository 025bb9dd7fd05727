"""Regenerates pyshim.c from shim.py: /usr/bin/python3 py-sandbox/gen_shim.py"""
import json
import os

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'shim.py'), encoding='ascii') as f:
    lines = f.read().splitlines()
out = ['/*', ' * pyshim.c - GENERATED from shim.py by gen_shim.py; edit shim.py instead.', ' */',
       '#include "pyshim.h"', '', 'const char tp_py_shim_source[] =']
out += ['\t' + json.dumps(line + '\n') for line in lines]
out[-1] += ';'
with open(os.path.join(here, 'pyshim.c'), 'w') as f:
    f.write('\n'.join(out) + '\n')
