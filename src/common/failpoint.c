#include "common/failpoint.h"

#ifdef AGENTHUB_FAILPOINTS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "@PATH": the list is PATH's first line, read on every check, so a test
 * can set and clear faults in a running server.  Returns SPEC itself
 * otherwise, or "" when PATH cannot be read. */
static const char *spec_of(const char *spec, char *buf, size_t size)
{
    FILE *f;

    if (!spec || spec[0] != '@')
        return spec;
    buf[0] = '\0';
    f = fopen(spec + 1, "r");
    if (!f)
        return buf;
    if (!fgets(buf, (int)size, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

int failpoint_active(const char *name)
{
    char buf[1024];
    const char *spec = spec_of(getenv("AGENTHUB_FAILPOINTS"), buf, sizeof(buf));
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
