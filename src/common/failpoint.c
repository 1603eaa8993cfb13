#include "common/failpoint.h"

#ifdef AGENTHUB_FAILPOINTS
#include <stdlib.h>
#include <string.h>

int failpoint_active(const char *name)
{
    const char *spec = getenv("AGENTHUB_FAILPOINTS");
    size_t name_len = strlen(name);

    while (spec && *spec) {
        const char *end = strchr(spec, ',');
        size_t len = end ? (size_t)(end - spec) : strlen(spec);
        if (len == name_len + 6 && memcmp(spec, name, name_len) == 0 &&
            memcmp(spec + name_len, "=fault", 6) == 0)
            return 1;
        spec = end ? end + 1 : NULL;
    }
    return 0;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int failpoint_unused;
#endif
