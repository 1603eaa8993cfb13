/* hub_log_disk_reader: the durable backend's reads.  A reader within a
 * session's ring is served from the ring, as with memory.  A reader behind
 * it (a tail or a since_seq older than the ring holds) is served from
 * disk: its read answers RING_NONE while a thread of its own reads the
 * next frames (DSK_READ_BYTES) on a read-only connection, the frames land
 * on the event loop as the session's window of older frames, and the
 * session's watchers are woken to read them.  Then the next window, until
 * the reader reaches the ring.  The event loop never waits on the disk.
 *
 * Every frame on disk was committed, and a ring only ever holds committed
 * frames, so the disk holds every seq from the session's oldest on disk
 * (trimmed) up to the ring's newest: the two together are one log. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "hub/hub_log_disk_internal.h"

/* The oldest seq a reader of E may ask for: what retention left on disk. */
static uint64_t disk_oldest(const struct dsk_session *e)
{
    return e->trimmed ? e->trimmed : 1;
}

/* 1 with *OUT when E's window has the frame after AFTER_SEQ. */
static int cold_find(struct dsk_cold *c, uint64_t after_seq, struct ring_entry *out)
{
    size_t lo = 0, hi;

    if (!c || after_seq < c->after || after_seq >= c->last)
        return 0;
    hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->entries[mid].seq <= after_seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == c->n)
        return 0;
    *out = c->entries[lo];
    return 1;
}

static void cold_free(struct dsk_cold *c)
{
    free(c);
}

/* Hands the next asked read to the thread when it is idle. */
static void reader_kick(struct hub_log_disk *d)
{
    struct dsk_session *e = d->fetch_head;

    if (d->read_busy || !e)
        return;
    d->fetch_head = e->fetch_next;
    if (!d->fetch_head)
        d->fetch_tail = &d->fetch_head;
    e->fetch_next = NULL;
    pthread_mutex_lock(&d->read_mu);
    d->read_busy = 1;
    d->read_sid = e->sid;
    d->read_after = e->fetch_after;
    d->read_session = e;
    pthread_cond_signal(&d->read_cv);
    pthread_mutex_unlock(&d->read_mu);
}

/* Asks for E's frames after AFTER_SEQ (nothing when a read is asked). */
static void fetch(struct hub_log_disk *d, struct dsk_session *e, uint64_t after_seq)
{
    if (e->fetching || !d->reader_started)
        return;
    e->fetching = 1;
    e->fetch_after = after_seq;
    e->fetch_next = NULL;
    *d->fetch_tail = e;
    d->fetch_tail = &e->fetch_next;
    reader_kick(d);
}

void hub_log_disk_reader_forget(struct hub_log_disk *d, struct dsk_session *e)
{
    struct dsk_session **pp = &d->fetch_head;

    while (*pp && *pp != e)
        pp = &(*pp)->fetch_next;
    if (*pp) {
        *pp = e->fetch_next;
        if (!*pp)
            d->fetch_tail = pp;
    }
    if (d->read_session == e)
        d->read_session = NULL; /* its answer is dropped */
    cold_free(e->cold);
    e->cold = NULL;
    e->fetching = 0;
}

enum ring_status hub_log_disk_read(void *impl, struct session *s, uint64_t after_seq,
                                   struct ring_entry *out)
{
    struct hub_log_disk *d = impl;
    enum ring_status status = hub_log_ring_read(impl, s, after_seq, out);
    const char *id;
    struct dsk_session *e;

    if (status != RING_EVICTED)
        return status;
    id = session_id(s);
    e = hub_log_disk_find(d, id, strlen(id));
    if (!e || after_seq + 1 < disk_oldest(e))
        return RING_EVICTED;
    if (cold_find(e->cold, after_seq, out)) {
        e->cold->used_ms = clock_monotonic_ms();
        d->frames_read++;
        return RING_OK;
    }
    /* The disk had nothing after it (retention took it meanwhile). */
    if (e->cold && e->cold->after == after_seq && e->cold->n == 0 && !e->fetching)
        return RING_EVICTED;
    fetch(d, e, after_seq);
    return RING_NONE;
}

enum ring_status hub_log_disk_check(void *impl, struct session *s, uint64_t after_seq)
{
    struct hub_log_disk *d = impl;
    enum ring_status status = hub_log_ring_check(impl, s, after_seq);
    const char *id = session_id(s);
    const struct dsk_session *e = hub_log_disk_find(d, id, strlen(id));

    if (!e)
        return status;
    /* Behind the ring: on disk unless retention took it. */
    if (status == RING_EVICTED && after_seq + 1 >= disk_oldest(e))
        return RING_OK;
    /* Past the ring but not past what was taken: frames being committed
     * (GetAgentStatus's last_seq may name them); they come. */
    if (status == RING_AHEAD && after_seq <= e->last_seq)
        return RING_OK;
    return status;
}

uint64_t hub_log_disk_tail(void *impl, struct session *s, uint64_t n)
{
    struct hub_log_disk *d = impl;
    uint64_t cursor = hub_log_ring_tail(impl, s, n), newest, floor;
    const char *id = session_id(s);
    const struct dsk_session *e = hub_log_disk_find(d, id, strlen(id));
    struct hub_log_span span;

    hub_log_ring_span(impl, s, &span);
    if (!e || n == 0 || span.count >= n)
        return cursor;
    /* More than the ring holds: the rest from disk, a session's seqs
     * being contiguous there. */
    newest = ring_newest_seq(session_ring(s));
    floor = disk_oldest(e) - 1;
    cursor = newest > n ? newest - n : 0;
    return cursor > floor ? cursor : floor;
}

void hub_log_disk_span(void *impl, struct session *s, struct hub_log_span *out)
{
    struct hub_log_disk *d = impl;
    const char *id = session_id(s);
    const struct dsk_session *e = hub_log_disk_find(d, id, strlen(id));

    hub_log_ring_span(impl, s, out);
    if (!e)
        return;
    /* A status event names the newest frame taken: it is committed by the
     * time the event is, which comes after it in the same order. */
    if (e->last_seq > out->newest)
        out->newest = e->last_seq;
    /* A reader is behind only once it is behind the disk too. */
    if (out->newest > 0 && (out->oldest == 0 || disk_oldest(e) < out->oldest))
        out->oldest = disk_oldest(e);
}

void hub_log_disk_cold_expire(struct hub_log_disk *d, int64_t now_ms)
{
    for (struct dsk_session *e = hub_log_disk_first(d); e; e = hub_log_disk_after(d, e))
        if (e->cold && (now_ms == 0 || now_ms - e->cold->used_ms >= DSK_COLD_IDLE_MS)) {
            cold_free(e->cold);
            e->cold = NULL;
        }
}

/* --- the thread ------------------------------------------------------------------ */

struct read_rows {
    struct ring_entry *entries;
    size_t n, cap;
    uint8_t *bytes;
    size_t len, bytes_cap;
};

static int read_row(void *arg, uint64_t seq, int64_t at, const void *data, size_t len)
{
    struct read_rows *r = arg;

    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        struct ring_entry *more = realloc(r->entries, cap * sizeof(*more));
        if (!more)
            return -1;
        r->entries = more;
        r->cap = cap;
    }
    if (r->len + len > r->bytes_cap) {
        size_t cap = r->bytes_cap ? r->bytes_cap : DSK_READ_BYTES;
        uint8_t *more;
        while (cap < r->len + len)
            cap *= 2;
        more = realloc(r->bytes, cap);
        if (!more)
            return -1;
        r->bytes = more;
        r->bytes_cap = cap;
    }
    if (len)
        memcpy(r->bytes + r->len, data, len);
    /* The bytes follow one another in BYTES: where each one starts is
     * known once the window is made (the block moves until then). */
    r->entries[r->n++] = (struct ring_entry){.len = len, .seq = seq, .at_unix_ms = at};
    r->len += len;
    return 0;
}

/* The frames of SID after AFTER as one window, or NULL with *RC. */
static struct dsk_cold *read_window(struct hub_log_disk *d, uint64_t sid, uint64_t after,
                                    enum logdb_rc *rc, char *err, size_t errlen)
{
    struct read_rows r = {0};
    struct dsk_cold *c = NULL;
    uint8_t *block;

    *rc = logdb_read(d->db, sid, after, DSK_READ_BYTES, read_row, &r, err, errlen);
    if (*rc == LOGDB_OK)
        c = malloc(sizeof(*c) + r.n * sizeof(*c->entries) + r.len);
    if (*rc == LOGDB_OK && !c) {
        *rc = LOGDB_NOMEM;
        snprintf(err, errlen, "out of memory");
    }
    if (c) {
        c->after = after;
        c->last = r.n ? r.entries[r.n - 1].seq : after;
        c->n = r.n;
        c->entries = (struct ring_entry *)(c + 1);
        block = (uint8_t *)(c->entries + r.n);
        if (r.len)
            memcpy(block, r.bytes, r.len);
        for (size_t i = 0, at = 0; i < r.n; i++) {
            c->entries[i] = r.entries[i];
            c->entries[i].data = block + at;
            at += r.entries[i].len;
        }
    }
    free(r.entries);
    free(r.bytes);
    return c;
}

static void *reader_main(void *arg)
{
    struct hub_log_disk *d = arg;

    pthread_mutex_lock(&d->read_mu);
    for (;;) {
        uint64_t sid, after;
        struct dsk_cold *c;
        enum logdb_rc rc;
        char err[256] = "";

        while ((!d->read_busy || d->read_done) && !d->reader_quit)
            pthread_cond_wait(&d->read_cv, &d->read_mu);
        if (d->reader_quit)
            break;
        sid = d->read_sid;
        after = d->read_after;
        pthread_mutex_unlock(&d->read_mu);
        c = read_window(d, sid, after, &rc, err, sizeof(err));
        pthread_mutex_lock(&d->read_mu);
        d->read_result = c;
        d->read_rc = rc;
        memcpy(d->read_err, err, sizeof(d->read_err));
        d->read_done = 1;
        if (write(d->read_pipe[1], "", 1) < 0 && errno != EAGAIN)
            log_warn("session log: cannot wake the event loop: %s", strerror(errno));
    }
    pthread_mutex_unlock(&d->read_mu);
    return NULL;
}

/* A window is in: it becomes its session's, whose watchers read it. */
static void on_read_done(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_disk *d = arg;
    struct dsk_session *e;
    struct dsk_cold *c;
    struct session *s;
    enum logdb_rc rc;
    char drain[64], err[256];

    while (read(fd, drain, sizeof(drain)) > 0)
        ;
    pthread_mutex_lock(&d->read_mu);
    if (!d->read_done) {
        pthread_mutex_unlock(&d->read_mu);
        return;
    }
    c = d->read_result;
    rc = d->read_rc;
    memcpy(err, d->read_err, sizeof(err));
    d->read_result = NULL;
    d->read_done = 0;
    d->read_busy = 0;
    pthread_mutex_unlock(&d->read_mu);
    e = d->read_session;
    d->read_session = NULL;
    d->reads++;
    if (!e) {
        cold_free(c);
        reader_kick(d);
        return;
    }
    e->fetching = 0;
    if (!c) {
        /* An empty window: its readers end as if they fell behind, and
         * ask again when their clients resume. */
        d->read_faults++;
        log_warn("session log %s: cannot read older frames of %s: %s: %s", d->path, e->id,
                 logdb_rc_name(rc), err);
        c = calloc(1, sizeof(*c));
        if (c)
            c->after = c->last = d->read_after;
    }
    if (c) {
        cold_free(e->cold);
        c->used_ms = clock_monotonic_ms();
        e->cold = c;
    }
    reader_kick(d);
    s = session_lookup(d->reg, e->id, e->len);
    if (s && c)
        session_wake(s); /* may end S: nothing of it afterwards */
}

int hub_log_disk_reader_start(struct hub_log_disk *d, char *err, size_t errlen)
{
    int rv;

    d->fetch_tail = &d->fetch_head;
    if (pipe2(d->read_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        d->read_pipe[0] = d->read_pipe[1] = -1;
        return -1;
    }
    d->read_event = event_new(d->base, d->read_pipe[0], EV_READ | EV_PERSIST, on_read_done, d);
    if (!d->read_event || event_add(d->read_event, NULL) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&d->read_mu, NULL);
    pthread_cond_init(&d->read_cv, NULL);
    rv = hub_log_disk_spawn(&d->reader, reader_main, d);
    if (rv != 0) {
        snprintf(err, errlen, "cannot start the session log's reading thread: %s", strerror(rv));
        pthread_cond_destroy(&d->read_cv);
        pthread_mutex_destroy(&d->read_mu);
        return -1;
    }
    d->reader_started = 1;
    return 0;
}

void hub_log_disk_reader_stop(struct hub_log_disk *d)
{
    if (d->reader_started) {
        pthread_mutex_lock(&d->read_mu);
        d->reader_quit = 1;
        pthread_cond_signal(&d->read_cv);
        pthread_mutex_unlock(&d->read_mu);
        pthread_join(d->reader, NULL);
        pthread_cond_destroy(&d->read_cv);
        pthread_mutex_destroy(&d->read_mu);
        d->reader_started = 0;
        cold_free(d->read_result);
        d->read_result = NULL;
    }
    if (d->read_event)
        event_free(d->read_event);
    d->read_event = NULL;
    if (d->read_pipe[0] >= 0) {
        close(d->read_pipe[0]);
        close(d->read_pipe[1]);
    }
    d->read_pipe[0] = d->read_pipe[1] = -1;
    hub_log_disk_cold_expire(d, 0);
}
