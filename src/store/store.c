/* store: what every backend shares. */
#include <string.h>

#include "store/store.h"

const char *store_rc_name(enum store_rc rc)
{
    switch (rc) {
    case STORE_OK:
        return "ok";
    case STORE_NOT_FOUND:
        return "not found";
    case STORE_CONFLICT:
        return "conflict";
    case STORE_INVALID:
        return "invalid";
    case STORE_FAULT:
        return "store fault";
    }
    return "unknown";
}

int store_target_is_postgres(const char *target)
{
    return target &&
           (strncmp(target, "postgres://", 11) == 0 || strncmp(target, "postgresql://", 13) == 0);
}

enum store_rc store_open(const char *target, struct store **out, char *err, size_t errlen)
{
    if (store_target_is_postgres(target))
        return postgres_store_open(target, out, err, errlen);
    return sqlite_store_open(target, out, err, errlen);
}

void store_set_timeout(struct store *s, int ms)
{
    if (s && s->ops->set_timeout)
        s->ops->set_timeout(s->impl, ms);
}

enum store_rc store_ping(struct store *s)
{
    if (!s || !s->ops->ping)
        return STORE_OK;
    return s->ops->ping(s->impl);
}

void store_write_metrics(struct store *s, FILE *out)
{
    if (s && s->ops->write_metrics)
        s->ops->write_metrics(s->impl, out);
}

void store_close(struct store *s)
{
    if (s)
        s->ops->close(s->impl);
}

/* 1 when ID is 1..MAX-1 bytes of printable ASCII without spaces. */
static int printable_id(const char *id, size_t max)
{
    size_t i, n;

    if (!id)
        return 0;
    n = strlen(id);
    if (n == 0 || n >= max)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c <= 0x20 || c >= 0x7f)
            return 0;
    }
    return 1;
}

int store_id_valid(const char *id)
{
    return printable_id(id, STORE_ID_MAX);
}

int store_native_id_valid(const char *id)
{
    return printable_id(id, STORE_NATIVE_ID_MAX);
}
