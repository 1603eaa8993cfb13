#include "core/session.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

void session_registry_init(struct session_registry *reg, size_t ring_bound)
{
    memset(reg, 0, sizeof(*reg));
    reg->ring_bound = ring_bound ? ring_bound : RING_DEFAULT_BOUND;
    reg->retain_bytes = SESSION_DEFAULT_RETAIN_BYTES;
    reg->retain_ms = SESSION_DEFAULT_RETAIN_MS;
    hash_map_init(&reg->table);
    list_init(&reg->all);
    list_init(&reg->lru);
    list_init(&reg->retained);
}

/* The session whose list node MEMBER is NODE. */
#define session_of(node, member) list_entry(node, struct session, member)

/* Makes S the most recently appended-to session. */
static void lru_touch(struct session *s)
{
    list_remove(&s->lru_link);
    list_insert_tail(&s->reg->lru, &s->lru_link);
}

/* Charges the change of S's ring heap since it was BEFORE bytes to the
 * registry's totals. */
static void session_account(struct session *s, size_t before)
{
    struct session_registry *reg = s->reg;
    size_t now = ring_heap_bytes(&s->ring);

    reg->log_bytes = reg->log_bytes - before + now;
    if (s->retained)
        reg->retained_bytes = reg->retained_bytes - before + now;
}

/* Takes S out of the hash table: its id can be opened afresh. */
static void table_unlink(struct session *s)
{
    if (!s->in_table)
        return;
    hash_map_remove(&s->reg->table, &s->by_id);
    s->in_table = 0;
}

/* Adds S to the retained list at NOW_MS (the newest end last). */
static void ret_push(struct session *s, int64_t now_ms)
{
    struct session_registry *reg = s->reg;

    s->over_at_ms = now_ms;
    list_insert_tail(&reg->retained, &s->retain_link);
    s->retained = 1;
    reg->retained_count++;
    reg->retained_bytes += ring_heap_bytes(&s->ring);
}

static void ret_unlink(struct session *s)
{
    struct session_registry *reg = s->reg;

    if (!s->retained)
        return;
    list_remove(&s->retain_link);
    s->retained = 0;
    reg->retained_count--;
    reg->retained_bytes -= ring_heap_bytes(&s->ring);
}

static void session_destroy(struct session *s)
{
    struct session_registry *reg = s->reg;

    list_remove(&s->lru_link);
    ret_unlink(s);
    table_unlink(s);
    reg->log_bytes -= ring_heap_bytes(&s->ring);
    list_remove(&s->all_link);
    ring_free(&s->ring);
    free(s->runner_id);
    free(s);
}

/* Gives back what a session whose tail is over and whose log is not
 * retained holds, once no watcher needs it and no wake pass runs over its
 * watcher list (a wake may unwatch the last watcher mid-pass): an ended
 * session is freed, a live one keeps only its ring's seq.  S may be freed. */
static void session_release(struct session *s)
{
    size_t before;

    if (!s->over || s->retained || s->watchers.count != 0 || s->watchers.waking)
        return;
    if (s->ended) {
        session_destroy(s);
        return;
    }
    before = ring_heap_bytes(&s->ring);
    if (before != 0) {
        ring_trim(&s->ring, 0); /* next_seq survives: seqs are never reused */
        session_account(s, before);
    }
}

/* Stops retaining S for REASON: an ended S is forgotten (its id opens
 * afresh); its log is released now, or when its last watcher leaves.  S may
 * be freed. */
static void session_evict(struct session *s, enum session_evict_reason reason)
{
    ret_unlink(s);
    s->reg->evictions[reason]++;
    if (s->ended)
        table_unlink(s);
    session_release(s);
}

/* Evicts the retained sessions whose tail ended first until the retained
 * logs fit the retention bytes and none is older than the retention age. */
static void session_retain_enforce(struct session_registry *reg, int64_t now_ms)
{
    struct list_node *node, *next;

    list_for_each_safe (node, next, &reg->retained) {
        struct session *s = session_of(node, retain_link); /* evicting S may free it */
        if (now_ms - s->over_at_ms >= reg->retain_ms)
            session_evict(s, SESSION_EVICT_AGE);
        else if (reg->retained_bytes > reg->retain_bytes)
            session_evict(s, SESSION_EVICT_BYTES);
        else
            break;
    }
}

/* S's tail is over: adds its log to the retained ones when retention is on
 * and there is something to read.  Returns 1 when S is retained. */
static int retain_push(struct session *s, int64_t now_ms)
{
    struct session_registry *reg = s->reg;

    if (!s->retained && reg->retain_bytes != 0 && reg->retain_ms > 0 && ring_count(&s->ring) != 0)
        ret_push(s, now_ms);
    return s->retained;
}

/* S's tail is over: retains its log (retain_push), or releases it (an ended
 * S leaves the table).  Then enforces the retention bounds.  S may be
 * freed. */
static void session_retain(struct session *s)
{
    struct session_registry *reg = s->reg;
    int64_t now_ms = clock_monotonic_ms();

    if (!retain_push(s, now_ms)) {
        if (s->ended)
            table_unlink(s);
        session_release(s);
    }
    session_retain_enforce(reg, now_ms);
}

/* Trims V's ring, unless V is EXCEPT, as far as the registry's excess over
 * its budget needs: first by compaction, then oldest entries first.  A
 * retained V trimmed to nothing is evicted (and may be freed). */
static void budget_trim(struct session_registry *reg, struct session *v,
                        const struct session *except)
{
    size_t heap = ring_heap_bytes(&v->ring);
    size_t need = reg->log_bytes - reg->log_budget;
    size_t target = heap > need ? heap - need : 0;
    size_t retained = ring_retained_bytes(&v->ring);
    size_t freed;

    if (v == except || heap == 0)
        return;
    freed = ring_trim(&v->ring, target < retained ? target : retained);
    if (freed == 0)
        return;
    session_account(v, heap);
    reg->trimmed_bytes += freed;
    reg->trimmed_sessions++;
    if (v->retained && ring_count(&v->ring) == 0)
        session_evict(v, SESSION_EVICT_BUDGET);
}

/* Trims the least recently appended-to sessions other than EXCEPT until the
 * registry's rings fit its budget. */
static void session_enforce_budget(struct session_registry *reg, const struct session *except)
{
    struct list_node *node, *next;

    list_for_each_safe (node, next, &reg->lru) {
        if (reg->log_bytes <= reg->log_budget)
            break;
        budget_trim(reg, session_of(node, lru_link), except); /* may free it */
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

void session_registry_set_retention(struct session_registry *reg, size_t bytes, int64_t age_ms)
{
    reg->retain_bytes = bytes;
    reg->retain_ms = age_ms > 0 ? age_ms : 0;
    if (bytes == 0 || reg->retain_ms == 0) {
        struct list_node *node, *next;
        list_for_each_safe (node, next, &reg->retained)
            session_evict(session_of(node, retain_link), SESSION_EVICT_BYTES);
        return;
    }
    session_retain_enforce(reg, clock_monotonic_ms());
}

size_t session_registry_expire(struct session_registry *reg, int64_t now_ms)
{
    uint64_t before = reg->evictions[SESSION_EVICT_AGE];
    struct list_node *node, *next;

    list_for_each_safe (node, next, &reg->retained) {
        struct session *s = session_of(node, retain_link);
        if (now_ms - s->over_at_ms < reg->retain_ms)
            break;
        session_evict(s, SESSION_EVICT_AGE); /* may free S */
    }
    return (size_t)(reg->evictions[SESSION_EVICT_AGE] - before);
}

void session_registry_free(struct session_registry *reg)
{
    struct list_node *node, *next;

    list_for_each_safe (node, next, &reg->all) {
        struct session *s = session_of(node, all_link);
        ring_free(&s->ring);
        free(s->runner_id);
        free(s);
    }
    list_init(&reg->all);
    list_init(&reg->lru);
    list_init(&reg->retained);
    reg->retained_count = 0;
    reg->retained_bytes = 0;
    reg->log_bytes = 0;
    hash_map_free(&reg->table);
    reg->count = 0;
}

size_t session_registry_count(const struct session_registry *reg)
{
    return reg->count;
}

size_t session_registry_memory_bytes(const struct session_registry *reg)
{
    size_t n = sizeof(*reg) + hash_map_memory_bytes(&reg->table);
    const struct list_node *node;

    list_for_each (node, &reg->all)
        n += session_memory_bytes(session_of(node, all_link));
    return n;
}

/* The session in the table under ID (live or retained ended), or NULL. */
static struct session *table_find(const struct session_registry *reg, const char *id, size_t len)
{
    struct hash_map_node *node = hash_map_find(&reg->table, id, len);

    return node != NULL ? hash_map_entry(node, struct session, by_id) : NULL;
}

struct session *session_find(const struct session_registry *reg, const char *id, size_t len)
{
    struct session *s = table_find(reg, id, len);

    return s != NULL && !s->ended && !s->closing ? s : NULL;
}

struct session *session_lookup(struct session_registry *reg, const char *id, size_t len)
{
    if (!list_is_empty(&reg->retained))
        session_registry_expire(reg, clock_monotonic_ms());
    return table_find(reg, id, len);
}

/* Starts a new tail of S at the next append. */
static void tail_restart(struct session *s)
{
    s->over = 0;
    s->tail_start = ring_newest_seq(&s->ring) + 1;
    ret_unlink(s);
}

/* Brings the retained ended session S back to life (a resumed agent). */
static void session_reopen(struct session *s)
{
    s->ended = 0;
    s->reg->count++;
    tail_restart(s);
    /* The agent starts over: evidence and binding of the last run are gone. */
    arbiter_init(&s->arb, ARBITER_STARTING);
    free(s->runner_id);
    s->runner_id = NULL;
}

enum session_open_result session_open(struct session_registry *reg, const char *id, size_t len,
                                      struct session **out)
{
    struct session *s;

    *out = NULL;
    if (len == 0 || len > SESSION_MAX_ID)
        return SESSION_BAD_ID;
    s = session_lookup(reg, id, len);
    if (s != NULL) {
        *out = s;
        s->closing = 0;
        if (!s->ended)
            return SESSION_EXISTS;
        session_reopen(s);
        return SESSION_REOPENED;
    }
    s = calloc(1, sizeof(*s) + len + 1);
    if (s == NULL)
        return SESSION_NOMEM;
    s->reg = reg;
    s->id_len = (uint16_t)len;
    memcpy(s->id, id, len);
    ring_init(&s->ring, reg->ring_bound);
    arbiter_init(&s->arb, ARBITER_STARTING);
    watch_list_init(&s->watchers);
    s->tail_start = 1;
    if (hash_map_insert(&reg->table, &s->by_id, s->id, len) != HASH_MAP_OK) {
        free(s);
        return SESSION_NOMEM;
    }
    s->in_table = 1;
    list_insert_head(&reg->all, &s->all_link);
    list_insert_tail(&reg->lru, &s->lru_link);
    reg->count++;
    *out = s;
    return SESSION_CREATED;
}

void session_end(struct session *s)
{
    if (s->ended)
        return;
    s->ended = 1;
    s->over = 1;
    s->reg->count--;
    watch_list_wake(&s->watchers);
    /* One retained since its agent stopped keeps its place. */
    session_retain(s);
}

void session_wake(struct session *s)
{
    watch_list_wake(&s->watchers);
}

int session_is_ended(const struct session *s)
{
    return s->ended;
}

void session_tail_end(struct session *s)
{
    if (s->ended || s->over)
        return;
    s->over = 1;
    watch_list_wake(&s->watchers);
    session_retain(s);
}

void session_closing(struct session *s)
{
    s->closing = 1;
}

void session_backdate_over(struct session *s, int64_t age_ms)
{
    if (s->retained && age_ms > 0)
        s->over_at_ms -= age_ms;
}

void session_tail_resume(struct session *s)
{
    if (s->ended || !s->over)
        return;
    tail_restart(s);
}

int session_tail_over(const struct session *s)
{
    return s->over;
}

uint64_t session_tail_start(const struct session *s)
{
    return s->tail_start;
}

uint64_t session_append(struct session *s, const void *frame, size_t len, int64_t at_unix_ms)
{
    struct session_registry *reg = s->reg;
    size_t before = ring_heap_bytes(&s->ring);
    uint64_t seq;

    if (s->ended)
        return 0;
    seq = ring_append(&s->ring, frame, len, at_unix_ms);
    session_account(s, before);
    if (seq != 0) {
        if (list_last(&reg->lru) != &s->lru_link)
            lru_touch(s);
        if (reg->log_budget != 0 && reg->log_bytes > reg->log_budget)
            session_enforce_budget(reg, s);
        /* A frame after the end (a repeated terminal state) of a log no
         * longer retained is kept as a newly ended log, or given back below
         * once no watcher needs it. */
        if (s->over && retain_push(s, clock_monotonic_ms()) &&
            reg->retained_bytes > reg->retain_bytes)
            session_retain_enforce(reg, clock_monotonic_ms());
        watch_list_wake(&s->watchers);
        session_release(s);
    }
    return seq;
}

void session_skip_to(struct session *s, uint64_t next_seq)
{
    size_t before = ring_heap_bytes(&s->ring);

    ring_skip_to(&s->ring, next_seq);
    session_account(s, before);
}

void session_watch(struct session *s, struct watcher *w)
{
    watch_list_add(&s->watchers, w);
}

void session_unwatch(struct session *s, struct watcher *w)
{
    watch_list_remove(&s->watchers, w);
    session_release(s);
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

/* The first live session from NODE on (NODE included), or NULL. */
static struct session *session_live_from(const struct session_registry *reg,
                                         const struct list_node *node)
{
    for (; node != NULL; node = list_next(&reg->all, node)) {
        struct session *s = session_of(node, all_link);
        if (!s->ended)
            return s;
    }
    return NULL;
}

struct session *session_first(const struct session_registry *reg)
{
    return session_live_from(reg, list_first(&reg->all));
}

struct session *session_next(const struct session *s)
{
    return session_live_from(s->reg, list_next(&s->reg->all, &s->all_link));
}
