/*
 * policy_catalog.h — the catalogs a policy chooses from (policy_catalog.c):
 * what tidepool knows how to offer safely in each language. Data only, below
 * policy.c, which validates a policy against them; it includes nothing.
 */
#ifndef TP_POLICY_CATALOG_H
#define TP_POLICY_CATALOG_H

/* NULL-terminated. */
extern const char *const tp_catalog_lua_libraries[];
extern const char *const tp_catalog_lua_functions[]; /* "print", "string.format", ... */
extern const char *const tp_catalog_py_modules[];
extern const char *const tp_catalog_py_builtins[];

#endif
