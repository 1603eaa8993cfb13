/* hub_snapshot: each session's latest status on the bus (hub_snapshot.h). */
#include "hub/hub_snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/arbiter.h"
#include "hub/hub_wire.h"

struct snapshot_entry {
    struct hash_map_node by_id;
    struct hash_map_node by_seq;
    uint64_t seq; /* by_seq's key */
    int64_t at_unix_ms;
    uint8_t *payload;
    size_t len;
    size_t id_len;
    char id[]; /* by_id's key */
};

static void entry_drop(struct hub_snapshot *snap, struct snapshot_entry *e)
{
    hash_map_remove(&snap->by_id, &e->by_id);
    hash_map_remove(&snap->by_seq, &e->by_seq);
    snap->bytes -= e->len;
    free(e->payload);
    free(e);
}

/* Makes EV the latest status of session ID[0..ID_LEN).  On a memory
 * shortage the session's older status is dropped too: a snapshot may then
 * miss it, but never tells a state the bus has since replaced. */
static void entry_put(struct hub_snapshot *snap, const char *id, size_t id_len,
                      const struct bus_event *ev)
{
    struct hash_map_node *node = hash_map_find(&snap->by_id, id, id_len);
    struct snapshot_entry *e = node ? hash_map_entry(node, struct snapshot_entry, by_id) : NULL;
    uint8_t *copy = malloc(ev->len ? ev->len : 1);

    if (!e && copy) {
        e = calloc(1, sizeof(*e) + id_len + 1);
        if (e) {
            memcpy(e->id, id, id_len);
            e->id_len = id_len;
            if (hash_map_insert(&snap->by_id, &e->by_id, e->id, id_len) != HASH_MAP_OK) {
                free(e);
                e = NULL;
            } else {
                /* Linked under a seq no event has, replaced just below. */
                e->seq = 0;
                if (hash_map_insert(&snap->by_seq, &e->by_seq, &e->seq, sizeof(e->seq)) !=
                    HASH_MAP_OK) {
                    hash_map_remove(&snap->by_id, &e->by_id);
                    free(e);
                    e = NULL;
                }
            }
        }
    }
    if (!e || !copy) {
        free(copy);
        if (e)
            entry_drop(snap, e);
        if (snap->losses++ == 0)
            log_warn("snapshot: out of memory: a session's status is left out of snapshots");
        return;
    }
    memcpy(copy, ev->payload, ev->len);
    hash_map_remove(&snap->by_seq, &e->by_seq);
    snap->bytes -= e->len;
    free(e->payload);
    e->payload = copy;
    e->len = ev->len;
    e->seq = ev->seq;
    e->at_unix_ms = ev->at_unix_ms;
    snap->bytes += e->len;
    /* The table has room: the node was in it a moment ago. */
    (void)hash_map_insert(&snap->by_seq, &e->by_seq, &e->seq, sizeof(e->seq));
}

static void apply(struct hub_snapshot *snap, const struct bus_event *ev)
{
    int state = hub_event_status_state(ev->payload, ev->len);
    struct hash_map_node *node;
    const char *id;
    size_t id_len;

    if (state < 0 || hub_event_session_id(ev->payload, ev->len, &id, &id_len) != 0 || id_len == 0)
        return;
    if (state != ARBITER_STOPPED) {
        entry_put(snap, id, id_len, ev);
        return;
    }
    node = hash_map_find(&snap->by_id, id, id_len);
    if (node)
        entry_drop(snap, hash_map_entry(node, struct snapshot_entry, by_id));
}

/* Reads the bus up to its newest event. */
static void catch_up(struct hub_snapshot *snap)
{
    struct bus_event ev;

    for (;;) {
        switch (hub_log_next(snap->log, snap->cursor, &ev)) {
        case BUS_OK:
            apply(snap, &ev);
            snap->cursor = ev.seq;
            break;
        case BUS_NONE:
            return;
        case BUS_RESYNC:
            /* Events before the oldest retained one were never here to
             * read: a copy that started later than seq 1, or events
             * published before the index began.  Going on from the
             * oldest is all there is (an empty bus: the newest). */
            snap->cursor = hub_log_bus_oldest(snap->log);
            break;
        }
    }
}

/* Runs right after each publish, before the bus changes again: reading
 * the one new event is cheap, and the index never falls behind. */
static void snapshot_wake(struct watcher *w)
{
    catch_up(container_of(w, struct hub_snapshot, watcher));
}

void hub_snapshot_init(struct hub_snapshot *snap, const struct hub_log *log)
{
    memset(snap, 0, sizeof(*snap));
    snap->log = log;
    hash_map_init(&snap->by_id);
    hash_map_init(&snap->by_seq);
    snap->watcher.wake = snapshot_wake;
    hub_log_subscribe(log, &snap->watcher);
    catch_up(snap);
}

void hub_snapshot_free(struct hub_snapshot *snap)
{
    struct hash_map_node *node;

    if (!snap->log)
        return;
    hub_log_unsubscribe(snap->log, &snap->watcher);
    while ((node = hash_map_first(&snap->by_id)) != NULL)
        entry_drop(snap, hash_map_entry(node, struct snapshot_entry, by_id));
    hash_map_free(&snap->by_id);
    hash_map_free(&snap->by_seq);
    snap->log = NULL;
}

static int seq_order(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

int hub_snapshot_take(struct hub_snapshot *snap, uint64_t **seqs, size_t *n, uint64_t *at_seq)
{
    size_t count, i = 0;

    catch_up(snap);
    *seqs = NULL;
    *n = 0;
    *at_seq = snap->cursor;
    count = hash_map_count(&snap->by_seq);
    if (count == 0)
        return 0;
    *seqs = malloc(count * sizeof(**seqs));
    if (!*seqs)
        return -1;
    for (struct hash_map_node *node = hash_map_first(&snap->by_seq); node;
         node = hash_map_next(&snap->by_seq, node))
        (*seqs)[i++] = hash_map_entry(node, struct snapshot_entry, by_seq)->seq;
    qsort(*seqs, count, sizeof(**seqs), seq_order);
    *n = count;
    return 0;
}

int hub_snapshot_get(const struct hub_snapshot *snap, uint64_t seq, struct bus_event *out)
{
    struct hash_map_node *node = hash_map_find(&snap->by_seq, &seq, sizeof(seq));
    const struct snapshot_entry *e;

    if (!node)
        return -1;
    e = hash_map_entry(node, struct snapshot_entry, by_seq);
    out->payload = e->payload;
    out->len = e->len;
    out->seq = e->seq;
    out->at_unix_ms = e->at_unix_ms;
    out->epoch = hub_log_epoch(snap->log);
    return 0;
}
