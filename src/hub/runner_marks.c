#include "hub/runner_marks.h"

#include <stdlib.h>
#include <string.h>

#define MARK_BUCKETS 256u

struct mark {
    struct mark *next;
    uint64_t seq;
    uint64_t generation;
    uint64_t nonce; /* of the last reset */
    size_t len;
    char id[];
};

struct runner_marks {
    struct mark *buckets[MARK_BUCKETS];
};

static unsigned bucket_of(const char *id, size_t len)
{
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)id[i]) * 1099511628211ull;
    return (unsigned)(h % MARK_BUCKETS);
}

struct runner_marks *runner_marks_new(void)
{
    return calloc(1, sizeof(struct runner_marks));
}

void runner_marks_free(struct runner_marks *marks)
{
    if (!marks)
        return;
    for (unsigned i = 0; i < MARK_BUCKETS; i++)
        while (marks->buckets[i]) {
            struct mark *m = marks->buckets[i];
            marks->buckets[i] = m->next;
            free(m);
        }
    free(marks);
}

/* The entry of ID[0..LEN), made when CREATE.  NULL when absent or memory is
 * short. */
static struct mark *find(struct runner_marks *marks, const char *id, size_t len, int create)
{
    struct mark **slot = &marks->buckets[bucket_of(id, len)];
    struct mark *m;

    for (m = *slot; m; m = m->next)
        if (m->len == len && memcmp(m->id, id, len) == 0)
            return m;
    if (!create)
        return NULL;
    m = calloc(1, sizeof(*m) + len + 1);
    if (!m)
        return NULL;
    memcpy(m->id, id, len);
    m->len = len;
    m->next = *slot;
    *slot = m;
    return m;
}

void runner_marks_see(struct runner_marks *marks, const char *runner_id, size_t len, uint64_t seq)
{
    struct mark *m = find(marks, runner_id, len, 1);

    if (m && seq > m->seq)
        m->seq = seq;
}

void runner_marks_reset(struct runner_marks *marks, const char *runner_id, size_t len,
                        uint64_t nonce)
{
    struct mark *m = find(marks, runner_id, len, 1);

    if (m && (m->nonce != nonce || nonce == 0)) {
        m->seq = 0;
        m->generation++;
        m->nonce = nonce;
    }
}

uint64_t runner_marks_get(const struct runner_marks *marks, const char *runner_id,
                          uint64_t *generation)
{
    const struct mark *m = find((struct runner_marks *)marks, runner_id, strlen(runner_id), 0);

    *generation = m ? m->generation : 0;
    return m ? m->seq : 0;
}
