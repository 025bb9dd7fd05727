/*
 * pyshim.h — the Python source of the language layer's policy (shim.py),
 * compiled into the binary: the zygote runs it once as "<tidepool>".
 */
#ifndef TP_PYSHIM_H
#define TP_PYSHIM_H

extern const char tp_py_shim_source[];

#endif
