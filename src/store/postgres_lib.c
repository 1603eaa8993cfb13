/* postgres_lib: see postgres_lib.h. */
#define PG_LIB_IMPLEMENTATION
#include <dlfcn.h>
#include <stdio.h>

#include "store/postgres_lib.h"

struct pg_lib pg_lib;

static int loaded;

int pg_lib_load(char *err, size_t errlen)
{
    void *handle;

    if (loaded)
        return 0;
    /* The soname, not libpq.so: that link exists only with libpq-dev. */
    handle = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(err, errlen, "PostgreSQL support needs libpq (libpq.so.5): %s", dlerror());
        return -1;
    }
#define PG_LIB_RESOLVE(name)                                                                       \
    *(void **)&pg_lib.name = dlsym(handle, #name);                                                 \
    if (!pg_lib.name) {                                                                            \
        snprintf(err, errlen, "libpq.so.5 has no %s: a newer libpq is needed", #name);             \
        dlclose(handle);                                                                           \
        return -1;                                                                                 \
    }
    PG_LIB_FUNCS(PG_LIB_RESOLVE)
#undef PG_LIB_RESOLVE
    loaded = 1; /* the handle stays open for the life of the process */
    return 0;
}
