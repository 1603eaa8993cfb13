/* hub_log_disk: see hub_log_disk.h.  This file has the hub_log operations
 * that write, what a committed entry does to the core structures, the load
 * at start, and metrics; hub_log_disk_writer.c has the batches and the
 * committing thread, hub_log_disk_reader.c the reads,
 * hub_log_disk_retain.c retention on disk. */
#include "hub/hub_log_disk.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/clock.h"
#include "common/log.h"
#include "hub/hub_log_disk_internal.h"
#include "hub/hub_wire.h"

static struct dsk_session *entry_find(struct hub_log_disk *d, const char *id, size_t len)
{
    struct hash_map_node *node = hash_map_find(&d->by_id, id, len);

    return node ? hash_map_entry(node, struct dsk_session, by_id) : NULL;
}

/* The first entry of D's walk, or NULL; with entry_after, every entry once.
 * The walker may remove the entry it stands on once it has the next. */
struct dsk_session *hub_log_disk_first(const struct hub_log_disk *d)
{
    struct hash_map_node *node = hash_map_first(&d->by_id);

    return node ? hash_map_entry(node, struct dsk_session, by_id) : NULL;
}

struct dsk_session *hub_log_disk_after(const struct hub_log_disk *d, const struct dsk_session *e)
{
    struct hash_map_node *node = hash_map_next(&d->by_id, &e->by_id);

    return node ? hash_map_entry(node, struct dsk_session, by_id) : NULL;
}

/* A new entry for ID with key SID.  NULL when memory is short. */
static struct dsk_session *entry_add(struct hub_log_disk *d, const char *id, size_t len,
                                     uint64_t sid)
{
    struct dsk_session *e = calloc(1, sizeof(*e) + len + 1);

    if (!e)
        return NULL;
    e->sid = sid;
    e->len = (uint16_t)len;
    memcpy(e->id, id, len);
    if (hash_map_insert(&d->by_id, &e->by_id, e->id, len) != HASH_MAP_OK) {
        free(e);
        return NULL;
    }
    if (hash_map_insert(&d->by_sid, &e->by_sid, &e->sid, sizeof(e->sid)) != HASH_MAP_OK) {
        hash_map_remove(&d->by_id, &e->by_id);
        free(e);
        return NULL;
    }
    if (sid >= d->next_sid)
        d->next_sid = sid + 1;
    d->sessions++;
    return e;
}

struct dsk_session *hub_log_disk_find(struct hub_log_disk *d, const char *id, size_t len)
{
    return entry_find(d, id, len);
}

void hub_log_disk_remove(struct hub_log_disk *d, struct dsk_session *e)
{
    hash_map_remove(&d->by_id, &e->by_id);
    hash_map_remove(&d->by_sid, &e->by_sid);
    d->sessions--;
    d->disk_bytes -= e->disk_bytes;
    hub_log_disk_reader_forget(d, e);
    free(e->chunks);
    free(e);
}

/* --- chunks: a session's frames on disk, counted -------------------------------- */

/* The size a chunk is closed at: a DSK_CHUNK_PARTS-th of the smaller of a
 * ring and the disk's bound, so retention gives up little at a time and a
 * start reads back little more than a ring. */
static uint64_t chunk_bytes(const struct hub_log_disk *d)
{
    uint64_t bound = d->config.session_bytes;

    if (d->config.memory_bytes && d->config.memory_bytes < bound)
        bound = d->config.memory_bytes;
    bound /= DSK_CHUNK_PARTS;
    return bound < DSK_CHUNK_MIN_BYTES ? DSK_CHUNK_MIN_BYTES : bound;
}

/* A new newest chunk of E from FIRST_SEQ.  NULL when memory is short. */
static struct dsk_chunk *chunk_push(struct dsk_session *e, uint64_t first_seq)
{
    if (!e->chunks || e->nchunks == e->chunks_cap) {
        uint32_t cap = e->chunks_cap ? e->chunks_cap * 2 : 4;
        struct dsk_chunk *more = realloc(e->chunks, cap * sizeof(*more));
        if (!more)
            return NULL;
        e->chunks = more;
        e->chunks_cap = cap;
    }
    e->chunks[e->nchunks] = (struct dsk_chunk){.first_seq = first_seq};
    return &e->chunks[e->nchunks++];
}

int hub_log_disk_count_frame(struct hub_log_disk *d, struct dsk_session *e, uint64_t seq,
                             size_t len, int64_t at)
{
    struct dsk_chunk *c = e->nchunks ? &e->chunks[e->nchunks - 1] : NULL;

    if (!c || c->bytes >= chunk_bytes(d)) {
        struct dsk_op *op;
        /* The full one's count is written with this batch, and the new
         * one's start.  The newest chunk's count is not written as it
         * grows: a start counts its frames again (load_entry). */
        if (c &&
            (op = hub_log_disk_take(d, LOGDB_OP_CHUNK, e, 0, c->first_seq, c->newest_at, NULL, 0)))
            op->op.aux = c->bytes;
        if (!(c = chunk_push(e, seq)))
            return -1;
        (void)hub_log_disk_take(d, LOGDB_OP_CHUNK, e, 0, seq, at, NULL, 0);
    }
    c->bytes += len;
    c->newest_at = at;
    e->disk_bytes += len;
    d->disk_bytes += len;
    return 0;
}

void hub_log_disk_chunk_drop(struct hub_log_disk *d, struct dsk_session *e)
{
    e->disk_bytes -= e->chunks[0].bytes;
    d->disk_bytes -= e->chunks[0].bytes;
    memmove(e->chunks, e->chunks + 1, (e->nchunks - 1) * sizeof(*e->chunks));
    e->nchunks--;
}

/* S's entry, made (and its name taken for the disk) when new.  NULL when
 * memory is short. */
static struct dsk_session *entry_of(struct hub_log_disk *d, struct session *s)
{
    const char *id = session_id(s);
    size_t len = strlen(id);
    struct dsk_session *e = entry_find(d, id, len);

    if (e)
        return e;
    e = entry_add(d, id, len, d->next_sid);
    if (e && !hub_log_disk_take(d, LOGDB_OP_SESSION, e, 0, 0, 0, id, len)) {
        hub_log_disk_remove(d, e);
        return NULL;
    }
    return e;
}

static struct dsk_runner *runner_find(struct hub_log_disk *d, const char *id, size_t len,
                                      int create)
{
    struct hash_map_node *node = hash_map_find(&d->runners, id, len);
    struct dsk_runner *r;

    if (node)
        return hash_map_entry(node, struct dsk_runner, by_id);
    if (!create || len > STORE_ID_MAX || !(r = calloc(1, sizeof(*r) + len + 1)))
        return NULL;
    r->len = (uint16_t)len;
    memcpy(r->id, id, len);
    if (hash_map_insert(&d->runners, &r->by_id, r->id, len) != HASH_MAP_OK) {
        free(r);
        return NULL;
    }
    return r;
}

/* --- committed entries into the core structures ------------------------------ */

void hub_log_disk_apply_entry(struct hub_log_disk *d, struct dsk_session *e, uint8_t kind,
                              uint64_t seq, const void *data, size_t len, int64_t at, int loading)
{
    struct session *s = session_lookup(d->reg, e->id, e->len);
    uint64_t newest;

    if (kind == HUB_LOG_END + 1) {
        if (s && !session_is_ended(s))
            session_end(s);
        e->over_unix_ms = at;
        return;
    }
    if (!s || session_is_ended(s)) {
        if (session_open(d->reg, e->id, e->len, &s) < 0 || !s)
            return;
    }
    if (kind == HUB_LOG_TAIL_END + 1) {
        session_tail_end(s);
        e->over_unix_ms = at;
        return;
    }
    if (kind == HUB_LOG_TAIL_RESUME + 1) {
        session_tail_resume(s);
        return;
    }
    newest = ring_newest_seq(session_ring(s));
    if (seq <= newest)
        return;
    /* The ring forgot the session while its log went on (or a restart read
     * back only the newest part): the seq carries on from the disk. */
    if (seq > newest + 1)
        session_skip_to(s, seq);
    if (loading) {
        int state = hub_frame_state(data, len);
        if (state > 0)
            arbiter_announce(session_arbiter(s), (enum arbiter_state)state);
    }
    session_append(s, data, len, at);
}

/* --- the hub_log operations ---------------------------------------------------- */

int hub_log_disk_writable(void *impl)
{
    struct hub_log_disk *d = impl;

    return d->fault == LOGDB_OK && d->pending.bytes < d->config.pending_bytes;
}

void hub_log_disk_state_changed(struct hub_log_disk *d)
{
    int writable = hub_log_disk_writable(d);

    if (writable == d->was_writable)
        return;
    d->was_writable = writable;
    if (d->state_fn)
        d->state_fn(d->state_arg);
}

static uint64_t disk_append(void *impl, struct session *s, const void *frame, size_t len,
                            int64_t at_unix_ms)
{
    struct hub_log_disk *d = impl;
    struct dsk_session *e;
    struct dsk_op *op;
    uint64_t seq;

    /* Closing: ended for producers, as memory's session_append says. */
    if (!hub_log_disk_writable(d) || session_is_ended(s) || s->closing || !(e = entry_of(d, s)))
        return 0;
    seq = e->last_seq > ring_newest_seq(session_ring(s)) ? e->last_seq
                                                         : ring_newest_seq(session_ring(s));
    seq++;
    op = hub_log_disk_take(d, LOGDB_OP_ENTRY, e, DSK_KIND_FRAME, seq, at_unix_ms, frame, len);
    if (!op)
        return 0;
    if (d->origin) {
        op->runner = d->origin;
        op->runner_seq = d->origin_seq;
        op->generation = d->origin->generation;
    }
    e->last_seq = seq;
    /* Short of memory the count stays behind: retention keeps more. */
    (void)hub_log_disk_count_frame(d, e, seq, len, at_unix_ms);
    d->origin_taken++;
    if (d->pending.bytes >= d->config.pending_bytes) {
        log_warn("session log: %zu bytes wait for the disk; appends refused until they are "
                 "committed",
                 d->pending.bytes);
        hub_log_disk_state_changed(d);
    }
    return seq;
}

static void disk_mark(void *impl, struct session *s, enum hub_log_mark mark)
{
    struct hub_log_disk *d = impl;
    struct dsk_session *e;

    /* Its end is on its way: like the marks of an ended session, nothing. */
    if (s->closing)
        return;
    e = entry_of(d, s);
    if (e && hub_log_disk_take(d, LOGDB_OP_ENTRY, e, (uint8_t)(mark + 1), e->last_seq,
                               clock_unix_ms(), NULL, 0)) {
        /* Ended for producers now, as in memory; for readers once stored. */
        if (mark == HUB_LOG_END)
            session_closing(s);
        return;
    }
    /* Memory short: the mark applies here at once, as in memory. */
    if (mark == HUB_LOG_END)
        session_end(s);
    else if (mark == HUB_LOG_TAIL_END)
        session_tail_end(s);
    else
        session_tail_resume(s);
}

static uint64_t disk_publish(void *impl, const void *payload, size_t len, int64_t at_unix_ms)
{
    struct hub_log_disk *d = impl;
    uint64_t seq = bus_newest_seq(d->bus) > d->bus_last ? bus_newest_seq(d->bus) : d->bus_last;

    if (!hub_log_disk_writable(d) ||
        !hub_log_disk_take(d, LOGDB_OP_BUS, NULL, 0, seq + 1, at_unix_ms, payload, len)) {
        d->bus_lost++;
        return 0;
    }
    d->bus_last = seq + 1;
    return seq + 1;
}

static enum bus_status disk_open(void *impl, uint64_t since_seq, uint64_t epoch, uint64_t *cursor)
{
    struct hub_log_disk *d = impl;

    return bus_cursor_open(d->bus, since_seq, epoch, cursor);
}

static enum bus_status disk_next(void *impl, uint64_t cursor, struct bus_event *out)
{
    struct hub_log_disk *d = impl;

    return bus_next(d->bus, cursor, out);
}

static uint64_t disk_bus_oldest(void *impl)
{
    struct hub_log_disk *d = impl;

    return bus_oldest_cursor(d->bus);
}

static uint64_t disk_bus_newest(void *impl)
{
    struct hub_log_disk *d = impl;

    return bus_newest_seq(d->bus);
}

static void disk_subscribe(void *impl, struct watcher *w)
{
    struct hub_log_disk *d = impl;

    bus_watch(d->bus, w);
}

static void disk_unsubscribe(void *impl, struct watcher *w)
{
    struct hub_log_disk *d = impl;

    bus_unwatch(d->bus, w);
}

static uint64_t disk_epoch(void *impl)
{
    struct hub_log_disk *d = impl;

    return d->epoch;
}

static uint32_t disk_origin(void *impl, const struct hub_log_origin *o)
{
    struct hub_log_disk *d = impl;
    uint32_t taken = d->origin_taken;

    d->origin_taken = 0;
    d->origin = o && o->runner_id ? runner_find(d, o->runner_id, strlen(o->runner_id), 1) : NULL;
    d->origin_seq = o ? o->runner_seq : 0;
    return taken;
}

/* FIRST..LAST made no frame: the mark may pass them once what was taken
 * before them is committed, so they ride in the batch's order. */
static void disk_runner_dealt(void *impl, const char *runner_id, uint64_t first, uint64_t last)
{
    struct hub_log_disk *d = impl;
    struct dsk_runner *r = runner_find(d, runner_id, strlen(runner_id), 1);
    struct dsk_op *op;

    if (!r || !(op = hub_log_disk_take(d, DSK_OP_DEALT, NULL, 0, 0, 0, NULL, 0)))
        return; /* the mark stays lower: those are sent again, never lost */
    op->runner = r;
    op->runner_seq = last;
    op->generation = r->generation;
}

/* Everything taken so far, for any Runner, is committed before W->done
 * (at once when it is). */
static void disk_runner_sync(void *impl, const char *runner_id, struct hub_log_wait *w)
{
    struct hub_log_disk *d = impl;

    w->first_ord = w->last_ord = d->ord;
    if (hub_log_disk_stored(impl, NULL, w)) {
        w->done(w, 1);
        return;
    }
    hub_log_disk_wait(impl, NULL, w);
}

static uint64_t disk_runner_mark(void *impl, const char *runner_id, uint64_t *generation)
{
    struct hub_log_disk *d = impl;
    const struct dsk_runner *r = runner_find(d, runner_id, strlen(runner_id), 0);

    *generation = r ? r->generation : 0;
    return r ? r->mark : 0;
}

/* A new run: here at once (the Runner's next frames are the new run's) and
 * on disk in order with its frames. */
static void disk_runner_reset(void *impl, const char *runner_id)
{
    struct hub_log_disk *d = impl;
    struct dsk_runner *r = runner_find(d, runner_id, strlen(runner_id), 1);
    struct dsk_op *op;

    if (!r)
        return;
    r->generation++;
    r->mark = 0;
    op = hub_log_disk_take(d, LOGDB_OP_RUNNER, NULL, 0, r->generation, 0, r->id, r->len);
    if (op)
        op->runner = r;
}

static void disk_write_metrics(void *impl, FILE *out)
{
    static const double bounds[12] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
    struct hub_log_disk *d = impl;
    uint64_t cumulative = 0;

    fprintf(out, "# HELP agenthub_log_commit_seconds Session log transactions, from the hand-off "
                 "to the committing thread to their commit.\n"
                 "# TYPE agenthub_log_commit_seconds histogram\n");
    for (int i = 0; i < 12; i++) {
        cumulative += d->commit_buckets[i];
        fprintf(out, "agenthub_log_commit_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", bounds[i],
                cumulative);
    }
    fprintf(out,
            "agenthub_log_commit_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n"
            "agenthub_log_commit_seconds_sum %.6f\n"
            "agenthub_log_commit_seconds_count %" PRIu64 "\n"
            "# TYPE agenthub_log_commit_seconds_max gauge\n"
            "agenthub_log_commit_seconds_max %.6f\n"
            "# TYPE agenthub_log_frames_committed_total counter\n"
            "agenthub_log_frames_committed_total %" PRIu64 "\n"
            "# TYPE agenthub_log_bytes_committed_total counter\n"
            "agenthub_log_bytes_committed_total %" PRIu64 "\n"
            "# TYPE agenthub_log_events_committed_total counter\n"
            "agenthub_log_events_committed_total %" PRIu64 "\n"
            "# HELP agenthub_log_fsyncs_total fsyncs of the session log: checkpoints, and "
            "each commit with --log-sync full.\n"
            "# TYPE agenthub_log_fsyncs_total counter\n"
            "agenthub_log_fsyncs_total %" PRIu64 "\n"
            "# TYPE agenthub_log_disk_bytes gauge\n"
            "agenthub_log_disk_bytes %" PRIu64 "\n"
            "# HELP agenthub_log_faults_total Commits the disk refused (each tried again).\n"
            "# TYPE agenthub_log_faults_total counter\n"
            "agenthub_log_faults_total %" PRIu64 "\n"
            "# HELP agenthub_log_writable 1 while the session log takes appends.\n"
            "# TYPE agenthub_log_writable gauge\n"
            "agenthub_log_writable %d\n"
            "# TYPE agenthub_log_pending_bytes gauge\n"
            "agenthub_log_pending_bytes %zu\n"
            "# HELP agenthub_log_appends_unstored_total Producer calls answered UNAVAILABLE "
            "because their frames were not committed.\n"
            "# TYPE agenthub_log_appends_unstored_total counter\n"
            "agenthub_log_appends_unstored_total %" PRIu64 "\n"
            "# TYPE agenthub_log_bus_events_lost_total counter\n"
            "agenthub_log_bus_events_lost_total %" PRIu64 "\n"
            "# TYPE agenthub_log_frames_loaded gauge\n"
            "agenthub_log_frames_loaded %" PRIu64 "\n"
            "# TYPE agenthub_log_load_seconds gauge\n"
            "agenthub_log_load_seconds %.3f\n"
            "# HELP agenthub_log_frame_bytes_on_disk Bytes of every session's frames the disk "
            "keeps (retention: --disk-log-bytes, --disk-log-budget-bytes, --disk-log-age-ms).\n"
            "# TYPE agenthub_log_frame_bytes_on_disk gauge\n"
            "agenthub_log_frame_bytes_on_disk %" PRIu64 "\n"
            "# HELP agenthub_log_frames_read_total Frames served from disk to readers behind "
            "a ring.\n"
            "# TYPE agenthub_log_frames_read_total counter\n"
            "agenthub_log_frames_read_total %" PRIu64 "\n"
            "# TYPE agenthub_log_disk_reads_total counter\n"
            "agenthub_log_disk_reads_total %" PRIu64 "\n"
            "# TYPE agenthub_log_disk_read_faults_total counter\n"
            "agenthub_log_disk_read_faults_total %" PRIu64 "\n"
            "# HELP agenthub_log_disk_trims_total Oldest frames of a session given up by "
            "retention on disk.\n"
            "# TYPE agenthub_log_disk_trims_total counter\n"
            "agenthub_log_disk_trims_total %" PRIu64 "\n",
            d->commits, (double)d->commit_ns_sum / 1e9, d->commits, (double)d->commit_ns_max / 1e9,
            d->frames_committed, d->bytes_committed, d->events_committed, d->fsyncs,
            logdb_disk_bytes(d->path), d->faults, hub_log_disk_writable(d), d->pending.bytes,
            d->waits_failed, d->bus_lost, d->frames_loaded, (double)d->load_ms / 1e3, d->disk_bytes,
            d->frames_read, d->reads, d->read_faults, d->trims);
}

static const struct hub_log_ops disk_ops = {
    .append = disk_append,
    .read = hub_log_disk_read,
    .check = hub_log_disk_check,
    .mark = disk_mark,
    .tail = hub_log_disk_tail,
    .span = hub_log_disk_span,
    .publish = disk_publish,
    .open = disk_open,
    .next = disk_next,
    .subscribe = disk_subscribe,
    .unsubscribe = disk_unsubscribe,
    .epoch = disk_epoch,
    .bus_oldest = disk_bus_oldest,
    .bus_newest = disk_bus_newest,
    .origin = disk_origin,
    .runner_mark = disk_runner_mark,
    .runner_reset = disk_runner_reset,
    .runner_dealt = disk_runner_dealt,
    .runner_sync = disk_runner_sync,
    .track = hub_log_disk_track,
    .stored = hub_log_disk_stored,
    .wait = hub_log_disk_wait,
    .writable = hub_log_disk_writable,
    .write_metrics = disk_write_metrics,
};

/* --- loading at start ------------------------------------------------------------ */

static int load_session(void *arg, uint64_t sid, const char *name, size_t len)
{
    struct hub_log_disk *d = arg;

    if (len == 0 || len > SESSION_MAX_ID)
        return 0; /* not a session id: skipped */
    return entry_add(d, name, len, sid) ? 0 : -1;
}

static int load_runner(void *arg, const char *name, size_t len, uint64_t generation, uint64_t mark)
{
    struct hub_log_disk *d = arg;
    struct dsk_runner *r = runner_find(d, name, len, 1);

    if (!r)
        return len > STORE_ID_MAX ? 0 : -1;
    r->generation = generation;
    r->mark = mark;
    return 0;
}

static struct dsk_session *entry_by_sid(struct hub_log_disk *d, uint64_t sid)
{
    struct hash_map_node *node = hash_map_find(&d->by_sid, &sid, sizeof(sid));

    return node ? hash_map_entry(node, struct dsk_session, by_sid) : NULL;
}

static int load_chunk(void *arg, uint64_t sid, uint64_t first_seq, uint64_t bytes, int64_t at)
{
    struct hub_log_disk *d = arg;
    struct dsk_session *e = entry_by_sid(d, sid);
    struct dsk_chunk *c;

    if (!e)
        return 0;
    if (!(c = chunk_push(e, first_seq)))
        return -1;
    c->bytes = bytes;
    c->newest_at = at;
    e->disk_bytes += bytes;
    d->disk_bytes += bytes;
    return 0;
}

static int load_last_mark(void *arg, uint64_t sid, uint64_t ord)
{
    struct dsk_session *e = entry_by_sid(arg, sid);

    if (e)
        e->mark_ord = ord;
    return 0;
}

static int load_entry(void *arg, uint64_t sid, uint8_t kind, uint64_t seq, int64_t at,
                      const void *data, size_t len)
{
    struct hub_log_disk *d = arg;
    struct dsk_session *e = entry_by_sid(d, sid);

    if (!e)
        return 0;
    hub_log_disk_apply_entry(d, e, kind, seq, data, len, at, 1);
    if (seq > e->last_seq)
        e->last_seq = seq;
    if (kind != DSK_KIND_FRAME)
        return 0;
    d->frames_loaded++;
    /* The newest chunk's frames, counted again (its row has its start). */
    if (e->nchunks && seq >= e->chunks[e->nchunks - 1].first_seq) {
        struct dsk_chunk *c = &e->chunks[e->nchunks - 1];
        c->bytes += len;
        c->newest_at = at;
        e->disk_bytes += len;
        d->disk_bytes += len;
    }
    return 0;
}

static int load_bus(void *arg, uint64_t seq, int64_t at, const void *data, size_t len)
{
    struct hub_log_disk *d = arg;

    if (d->bus_trimmed == 0)
        d->bus_trimmed = seq;
    if (seq <= bus_newest_seq(d->bus))
        return 0;
    bus_skip_to(d->bus, seq);
    d->events_loaded++;
    return bus_publish(d->bus, data, len, at) ? 0 : -1;
}

/* The seq from which E's frames are read back: the newest chunks that fill
 * a ring (all of them when memory's bound is not known). */
static uint64_t load_from(const struct hub_log_disk *d, const struct dsk_session *e)
{
    uint64_t bytes = 0;

    for (uint32_t i = e->nchunks; d->config.memory_bytes && i-- > 0;) {
        bytes += e->chunks[i].bytes;
        if (bytes >= d->config.memory_bytes)
            return e->chunks[i].first_seq;
    }
    return 0;
}

static int by_mark_order(const void *a, const void *b)
{
    const struct dsk_session *x = *(struct dsk_session *const *)a;
    const struct dsk_session *y = *(struct dsk_session *const *)b;

    return x->mark_ord < y->mark_ord ? -1 : x->mark_ord > y->mark_ord;
}

/* Every session's newest frames, sessions in the order their newest marks
 * were written (so ended logs are retained in the order their tails
 * ended).  Returns LOGDB_OK or the error with ERR. */
static enum logdb_rc load_sessions(struct hub_log_disk *d, const struct logdb_load_fns *fns,
                                   char *err, size_t errlen)
{
    struct dsk_session **all = malloc((d->sessions + 1) * sizeof(*all));
    enum logdb_rc rc = LOGDB_OK;
    size_t n = 0;

    if (!all) {
        snprintf(err, errlen, "out of memory");
        return LOGDB_NOMEM;
    }
    for (struct dsk_session *e = hub_log_disk_first(d); e; e = hub_log_disk_after(d, e))
        all[n++] = e;
    qsort(all, n, sizeof(*all), by_mark_order);
    for (size_t i = 0; i < n && rc == LOGDB_OK; i++) {
        struct dsk_session *e = all[i];
        uint64_t from = load_from(d, e);
        e->trimmed = e->nchunks ? e->chunks[0].first_seq : 0;
        /* Read from no later than the newest chunk's start: load_entry
         * counts its frames. */
        if (e->nchunks) {
            struct dsk_chunk *c = &e->chunks[e->nchunks - 1];
            if (from > c->first_seq)
                from = c->first_seq;
            e->disk_bytes -= c->bytes;
            d->disk_bytes -= c->bytes;
            c->bytes = 0;
        }
        rc = logdb_load_session(d->db, e->sid, from, fns, d, err, errlen);
    }
    free(all);
    return rc;
}

/* Ended logs keep the retention they had left: their tails ended before
 * the restart. */
static void load_backdate(struct hub_log_disk *d)
{
    int64_t now = clock_unix_ms();

    for (struct dsk_session *e = hub_log_disk_first(d); e; e = hub_log_disk_after(d, e)) {
        struct session *s = session_lookup(d->reg, e->id, e->len);
        if (s && session_tail_over(s) && e->over_unix_ms && e->over_unix_ms < now)
            session_backdate_over(s, now - e->over_unix_ms);
        e->over_unix_ms = 0;
    }
    session_registry_expire(d->reg, clock_monotonic_ms());
}

static uint64_t new_epoch(void)
{
    uint64_t epoch = 0;

    if (getrandom(&epoch, sizeof(epoch), 0) != (ssize_t)sizeof(epoch))
        epoch = clock_monotonic_ns() ^ ((uint64_t)clock_unix_ms() << 20);
    epoch &= (uint64_t)INT64_MAX; /* the file keeps it as a signed integer */
    return epoch ? epoch : 1;
}

struct hub_log_disk *hub_log_disk_open(struct hub_log *log, struct event_base *base,
                                       struct session_registry *reg, struct bus *bus,
                                       const struct hub_log_disk_config *config, enum logdb_rc *rc,
                                       char *err, size_t errlen)
{
    static const struct logdb_load_fns fns = {
        .session = load_session,
        .runner = load_runner,
        .chunk = load_chunk,
        .last_mark = load_last_mark,
        .entry = load_entry,
        .bus = load_bus,
    };
    struct hub_log_disk *d = calloc(1, sizeof(*d));
    uint64_t started = clock_monotonic_ns();

    if (d) {
        hash_map_init(&d->by_id);
        hash_map_init(&d->by_sid);
        hash_map_init(&d->runners);
        list_init(&d->waits);
    }
    if (!d || !(d->path = strdup(config->path))) {
        free(d);
        *rc = LOGDB_NOMEM;
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->pipe_fds[0] = d->pipe_fds[1] = -1;
    d->read_pipe[0] = d->read_pipe[1] = -1;
    d->fetch_tail = &d->fetch_head;
    d->base = base;
    d->reg = reg;
    d->bus = bus;
    d->config = *config;
    d->config.path = d->path;
    d->next_sid = 1;
    *rc = logdb_open(d->path, config->sync, new_epoch(), &d->db, &d->epoch, err, errlen);
    if (*rc != LOGDB_OK)
        goto fail;
    bus->epoch = d->epoch;
    *rc = logdb_load(d->db, &fns, d, err, errlen);
    if (*rc == LOGDB_OK)
        *rc = load_sessions(d, &fns, err, errlen);
    if (*rc != LOGDB_OK)
        goto fail;
    load_backdate(d);
    d->bus_last = bus_newest_seq(bus);
    d->load_ms = (clock_monotonic_ns() - started) / 1000000;
    d->gc_timer = event_new(base, -1, EV_PERSIST, hub_log_disk_gc, d);
    if (!d->gc_timer || hub_log_disk_writer_start(d, err, errlen) != 0 ||
        hub_log_disk_reader_start(d, err, errlen) != 0) {
        *rc = LOGDB_NOMEM;
        goto fail;
    }
    event_add(d->gc_timer, &(struct timeval){1, 0});
    d->was_writable = 1;
    log->ops = &disk_ops;
    log->impl = d;
    log_info("session log %s: %" PRIu64 " frames of %" PRIu64 " sessions and %" PRIu64
             " bus events read back in %" PRIu64 " ms (epoch %" PRIu64 ")",
             d->path, d->frames_loaded, d->sessions, d->events_loaded, d->load_ms, d->epoch);
    return d;
fail:
    hub_log_disk_free(d);
    return NULL;
}

void hub_log_disk_free(struct hub_log_disk *d)
{
    if (!d)
        return;
    hub_log_disk_reader_stop(d);
    hub_log_disk_writer_stop(d);
    if (d->gc_timer)
        event_free(d->gc_timer);
    logdb_close(d->db);
    for (struct dsk_session *e = hub_log_disk_first(d), *next; e; e = next) {
        next = hub_log_disk_after(d, e);
        free(e->chunks);
        free(e);
    }
    for (struct hash_map_node *node = hash_map_first(&d->runners), *next; node; node = next) {
        next = hash_map_next(&d->runners, node);
        free(hash_map_entry(node, struct dsk_runner, by_id));
    }
    hash_map_free(&d->by_id);
    hash_map_free(&d->by_sid);
    hash_map_free(&d->runners);
    free(d->path);
    free(d);
}

const char *hub_log_disk_fault(const struct hub_log_disk *d)
{
    if (d->fault != LOGDB_OK)
        return d->fault_msg;
    if (d->pending.bytes >= d->config.pending_bytes)
        return "the session log's disk is behind";
    return NULL;
}

void hub_log_disk_on_state(struct hub_log_disk *d, void (*fn)(void *arg), void *arg)
{
    d->state_fn = fn;
    d->state_arg = arg;
    d->was_writable = hub_log_disk_writable(d);
}
