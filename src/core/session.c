#include "core/session.h"

#include <stdlib.h>
#include <string.h>

#define SESSION_MIN_BUCKETS 64u

void session_registry_init(struct session_registry *reg, size_t ring_bound)
{
    memset(reg, 0, sizeof(*reg));
    reg->ring_bound = ring_bound ? ring_bound : RING_DEFAULT_BOUND;
}

static uint64_t session_hash(const char *id, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)id[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Unlinks S from the LRU list. */
static void lru_unlink(struct session *s)
{
    struct session_registry *reg = s->reg;

    if (s->lru_prev != NULL)
        s->lru_prev->lru_next = s->lru_next;
    else
        reg->lru_head = s->lru_next;
    if (s->lru_next != NULL)
        s->lru_next->lru_prev = s->lru_prev;
    else
        reg->lru_tail = s->lru_prev;
    s->lru_prev = s->lru_next = NULL;
}

/* Makes S the most recently appended-to session. */
static void lru_push(struct session *s)
{
    struct session_registry *reg = s->reg;

    s->lru_prev = reg->lru_tail;
    s->lru_next = NULL;
    if (reg->lru_tail != NULL)
        reg->lru_tail->lru_next = s;
    else
        reg->lru_head = s;
    reg->lru_tail = s;
}

/* Trims the least recently appended-to sessions other than EXCEPT until the
 * registry's rings fit its budget.  Each victim is trimmed only as far as
 * the excess needs: first by compaction, then oldest entries first. */
static void session_enforce_budget(struct session_registry *reg, const struct session *except)
{
    struct session *v;

    /* Trimming never unlinks a session, so the walk may go on from V. */
    for (v = reg->lru_head; v != NULL && reg->log_bytes > reg->log_budget; v = v->lru_next) {
        size_t heap = ring_heap_bytes(&v->ring);
        size_t need = reg->log_bytes - reg->log_budget;
        size_t target = heap > need ? heap - need : 0;
        size_t retained = ring_retained_bytes(&v->ring);
        size_t freed;

        if (v == except || heap == 0)
            continue;
        freed = ring_trim(&v->ring, target < retained ? target : retained);
        if (freed == 0)
            continue;
        reg->log_bytes -= freed;
        reg->trimmed_bytes += freed;
        reg->trimmed_sessions++;
    }
}

void session_registry_set_budget(struct session_registry *reg, size_t budget)
{
    reg->log_budget = budget;
    if (budget != 0 && reg->log_bytes > budget)
        session_enforce_budget(reg, NULL);
}

size_t session_registry_log_bytes(const struct session_registry *reg)
{
    return reg->log_bytes;
}

static void session_destroy(struct session *s)
{
    struct session_registry *reg = s->reg;

    lru_unlink(s);
    reg->log_bytes -= ring_heap_bytes(&s->ring);
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        reg->all = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    ring_free(&s->ring);
    free(s->runner_id);
    free(s);
}

void session_registry_free(struct session_registry *reg)
{
    struct session *s = reg->all, *next;

    for (; s != NULL; s = next) {
        next = s->next;
        ring_free(&s->ring);
        free(s->runner_id);
        free(s);
    }
    reg->all = NULL;
    reg->lru_head = reg->lru_tail = NULL;
    reg->log_bytes = 0;
    free(reg->buckets);
    reg->buckets = NULL;
    reg->nbuckets = 0;
    reg->count = 0;
}

size_t session_registry_count(const struct session_registry *reg)
{
    return reg->count;
}

size_t session_registry_memory_bytes(const struct session_registry *reg)
{
    size_t n = sizeof(*reg) + reg->nbuckets * sizeof(*reg->buckets);
    const struct session *s;

    for (s = reg->all; s != NULL; s = s->next)
        n += session_memory_bytes(s);
    return n;
}

static struct session **session_slot(const struct session_registry *reg, uint64_t h)
{
    return &reg->buckets[h & (reg->nbuckets - 1)];
}

struct session *session_find(const struct session_registry *reg, const char *id, size_t len)
{
    uint64_t h;
    struct session *s;

    if (reg->nbuckets == 0)
        return NULL;
    h = session_hash(id, len);
    for (s = *session_slot(reg, h); s != NULL; s = s->hnext) {
        if (s->hash == h && s->id_len == len && memcmp(s->id, id, len) == 0)
            return s;
    }
    return NULL;
}

/* Doubles the table (or creates it).  Returns -1, table unchanged, on
 * memory exhaustion. */
static int session_grow(struct session_registry *reg)
{
    size_t n = reg->nbuckets ? reg->nbuckets * 2 : SESSION_MIN_BUCKETS;
    struct session **nb = calloc(n, sizeof(*nb));
    size_t i;

    if (nb == NULL)
        return -1;
    for (i = 0; i < reg->nbuckets; i++) {
        struct session *s = reg->buckets[i], *next;
        for (; s != NULL; s = next) {
            next = s->hnext;
            s->hnext = nb[s->hash & (n - 1)];
            nb[s->hash & (n - 1)] = s;
        }
    }
    free(reg->buckets);
    reg->buckets = nb;
    reg->nbuckets = n;
    return 0;
}

int session_open(struct session_registry *reg, const char *id, size_t len, struct session **out)
{
    struct session *s;
    struct session **slot;

    *out = NULL;
    if (len == 0 || len > SESSION_MAX_ID)
        return SESSION_BAD_ID;
    s = session_find(reg, id, len);
    if (s != NULL) {
        *out = s;
        return SESSION_EXISTS;
    }
    /* Keep the load factor at most 1 so chains stay short; a failed growth
     * of an existing table only lengthens chains. */
    if (reg->count >= reg->nbuckets && session_grow(reg) != 0 && reg->nbuckets == 0)
        return SESSION_NOMEM;
    s = calloc(1, sizeof(*s) + len + 1);
    if (s == NULL)
        return SESSION_NOMEM;
    s->reg = reg;
    s->hash = session_hash(id, len);
    s->id_len = (uint16_t)len;
    memcpy(s->id, id, len);
    ring_init(&s->ring, reg->ring_bound);
    arbiter_init(&s->arb, ARBITER_STARTING);
    watch_list_init(&s->watchers);
    slot = session_slot(reg, s->hash);
    s->hnext = *slot;
    *slot = s;
    s->next = reg->all;
    if (reg->all != NULL)
        reg->all->prev = s;
    reg->all = s;
    lru_push(s);
    reg->count++;
    *out = s;
    return SESSION_CREATED;
}

static void session_unlink(struct session *s)
{
    struct session **pp = session_slot(s->reg, s->hash);

    while (*pp != s)
        pp = &(*pp)->hnext;
    *pp = s->hnext;
    s->hnext = NULL;
    s->reg->count--;
}

/* Frees S once it has ended, nobody watches it, and no wake pass runs over
 * its watcher list (a wake may unwatch the last watcher mid-pass). */
static void session_maybe_free(struct session *s)
{
    if (s->ended && s->watchers.count == 0 && !s->watchers.waking)
        session_destroy(s);
}

void session_end(struct session *s)
{
    if (s->ended)
        return;
    s->ended = 1;
    session_unlink(s);
    watch_list_wake(&s->watchers);
    session_maybe_free(s);
}

int session_is_ended(const struct session *s)
{
    return s->ended;
}

uint64_t session_append(struct session *s, const void *frame, size_t len, int64_t at_unix_ms)
{
    struct session_registry *reg = s->reg;
    size_t before = ring_heap_bytes(&s->ring);
    uint64_t seq;

    if (s->ended)
        return 0;
    seq = ring_append(&s->ring, frame, len, at_unix_ms);
    reg->log_bytes = reg->log_bytes - before + ring_heap_bytes(&s->ring);
    if (seq != 0) {
        if (reg->lru_tail != s) {
            lru_unlink(s);
            lru_push(s);
        }
        if (reg->log_budget != 0 && reg->log_bytes > reg->log_budget)
            session_enforce_budget(reg, s);
        watch_list_wake(&s->watchers);
        session_maybe_free(s);
    }
    return seq;
}

void session_watch(struct session *s, struct session_watcher *w)
{
    watch_list_add(&s->watchers, w);
}

void session_unwatch(struct session *s, struct session_watcher *w)
{
    watch_list_remove(&s->watchers, w);
    session_maybe_free(s);
}

size_t session_watcher_count(const struct session *s)
{
    return s->watchers.count;
}

int session_bind(struct session *s, const char *runner_id)
{
    char *copy = NULL;

    if (runner_id != NULL) {
        copy = strdup(runner_id);
        if (copy == NULL)
            return -1;
    }
    free(s->runner_id);
    s->runner_id = copy;
    return 0;
}

const char *session_binding(const struct session *s)
{
    return s->runner_id;
}

const char *session_id(const struct session *s)
{
    return s->id;
}

struct ring *session_ring(struct session *s)
{
    return &s->ring;
}

struct arbiter *session_arbiter(struct session *s)
{
    return &s->arb;
}

size_t session_memory_bytes(const struct session *s)
{
    size_t n = sizeof(*s) + (size_t)s->id_len + 1 + ring_heap_bytes(&s->ring);

    if (s->runner_id != NULL)
        n += strlen(s->runner_id) + 1;
    return n;
}

static struct session *session_live_from(struct session *s)
{
    while (s != NULL && s->ended)
        s = s->next;
    return s;
}

struct session *session_first(const struct session_registry *reg)
{
    return session_live_from(reg->all);
}

struct session *session_next(const struct session *s)
{
    return session_live_from(s->next);
}
