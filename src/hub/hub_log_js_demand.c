/* hub_log_js_demand: reading sessions on demand (--cluster-read on-demand).
 *
 * A node then reads a session's subject only while it has a use for it: a
 * writer (frames in its outbox or in flight, producers waiting) or a
 * reader (a pane, or one waiting to start).  It reads it through a
 * consumer of that subject alone (js_link_watch), from the first message
 * its copy does not hold, and lets the consumer go once the session has
 * been unused for --cluster-linger-ms.  Every Runner's subject is read
 * all the time, through one consumer of CLUSTER_RUNNERS_FILTER: Runners'
 * marks come from there alone.
 *
 * A session's copy is current once its consumer delivered what the
 * subject held when it was made, and the heads stream was asked where the
 * subject ends: a newest message the frames stream still holds comes
 * through the consumer (the copy is current once it applied it); one the
 * frames stream evicted while this node did not read the subject is
 * applied from the heads stream, as when a node starts after an eviction.
 * Writers publish and readers start only on a current copy, so what they
 * see of a session is what a node reading every session would see.  The
 * copy itself stays when its consumer goes (bounded like every copy), and
 * the next consumer continues after it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "hub/hub_log_js_internal.h"
#include "hub/hub_wire.h"

/* A consumer making no progress this long is made again. */
#define DEMAND_STALL_NS ((uint64_t)10 * 1000 * 1000 * 1000)
/* The sweep's period (ms): consumers to make, lookups to retry, idle
 * sessions to let go, readers past their deadline. */
#define DEMAND_SWEEP_MS 250
/* A session with a pane and no writer here: how often its copy is checked
 * against the subject's newest message.  Its consumer is made anew when
 * the copy did not reach what the check before saw. */
#define DEMAND_CHECK_NS ((uint64_t)5 * 1000 * 1000 * 1000)

static int runner_subject(const struct js_session *e)
{
    return e->subject[sizeof(CLUSTER_FRAMES_PREFIX) - 1] == '=';
}

static void set_demand(struct js_session *e, uint8_t demand)
{
    e->demand = demand;
    e->demand_since_ns = clock_monotonic_ns();
}

/* Starts reading E after what its copy holds.  Stays DEMAND_NONE when
 * memory is short (the sweep tries again). */
static void watch_open(struct hub_log_js *js, struct js_session *e)
{
    uint64_t from = e->last_stream_seq ? e->last_stream_seq + 1 : 0;

    if (js_link_watch(js->link, e->subject, from, &e->watch_id) != 0)
        return;
    js->watches_opened++;
    e->demand_until = 0;
    e->head_asking = 0;
    set_demand(e, DEMAND_OPENING);
    log_debug("cluster: %s: reading it (consumer %" PRIu64 " from stream seq %" PRIu64 ")",
              e->subject, e->watch_id, from);
}

static void watch_close(struct hub_log_js *js, struct js_session *e)
{
    e->checking = 0;
    e->check_until = 0;
    if (e->demand == DEMAND_NONE)
        return;
    log_debug("cluster: %s: no longer read (consumer %" PRIu64 ", after stream seq %" PRIu64 ")",
              e->subject, e->watch_id, e->last_stream_seq);
    js_link_unwatch(js->link, e->watch_id);
    js->watches_closed++;
    e->watch_id = 0;
    set_demand(e, DEMAND_NONE);
}

/* E's copy is current: its waiting readers start, its writer goes on. */
static void become_current(struct hub_log_js *js, struct js_session *e)
{
    log_debug("cluster: %s: its copy is current (stream seq %" PRIu64 ", seq %" PRIu64 ")",
              e->subject, e->last_stream_seq, e->last_seq);
    set_demand(e, DEMAND_CURRENT);
    /* The heads stream was asked just now: the writer need not ask it. */
    e->head = HEAD_KNOWN;
    while (!list_is_empty(&e->readers)) {
        struct hub_log_wait *w = hub_log_wait_of(list_first(&e->readers));
        hub_log_wait_cancel(w);
        w->done(w, 1);
    }
    hub_log_js_pump(js, e);
}

static void on_demand_head(void *arg, const char *subject, enum js_last last,
                           const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;
    struct js_session *e = hub_log_js_session_get(js, subject, NULL, 0);

    if (!e || e->demand != DEMAND_HEAD || !e->head_asking)
        return;
    e->head_asking = 0;
    log_debug("cluster: %s: head %d at stream seq %" PRIu64 " (copy at %" PRIu64 ")", subject,
              (int)last, m ? m->stream_seq : 0, e->last_stream_seq);
    if (last == JS_LAST_FAILED)
        return; /* asked again by the sweep */
    if (last == JS_LAST_LIVE && m->stream_seq > e->last_stream_seq) {
        /* Written after the consumer was made: it delivers it. */
        e->demand_until = m->stream_seq;
        return;
    }
    if (last == JS_LAST_FOUND && m->stream_seq > e->last_stream_seq) {
        js->heads_applied++;
        log_info("cluster: %s: its newest messages are gone from the frames stream; continuing "
                 "after stream seq %" PRIu64 " (seq %s), from the heads stream",
                 subject, m->stream_seq, m->seq_header ? m->seq_header : "?");
        hub_log_js_apply_head(js, m);
    }
    become_current(js, e);
}

static void ask_head(struct hub_log_js *js, struct js_session *e)
{
    uint64_t id;

    if (js_link_last(js->link, e->subject, on_demand_head, js, &id) == 0)
        e->head_asking = 1;
}

int hub_log_js_demand(struct hub_log_js *js, struct js_session *e)
{
    if (!js->on_demand || runner_subject(e))
        return 1;
    e->used_ns = clock_monotonic_ns();
    if (e->demand == DEMAND_CURRENT)
        return 1;
    if (e->demand == DEMAND_NONE)
        watch_open(js, e);
    return 0;
}

/* The answer to a pane's session's check (sweep). */
static void on_demand_check(void *arg, const char *subject, enum js_last last,
                            const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;
    struct js_session *e = hub_log_js_session_get(js, subject, NULL, 0);

    if (!e || e->demand != DEMAND_CURRENT || !e->checking)
        return;
    e->checking = 0;
    if ((last != JS_LAST_LIVE && last != JS_LAST_FOUND) || m->stream_seq <= e->last_stream_seq) {
        e->check_until = 0; /* the copy holds the newest (or it is not known now) */
        return;
    }
    if (last == JS_LAST_FOUND || (e->check_until && e->last_stream_seq < e->check_until)) {
        /* Behind what the last check saw five seconds ago, or behind an
         * evicted newest message: the consumer is made anew (and the
         * copy current again, the heads stream included). */
        hub_log_js_demand_renew(js, e);
        return;
    }
    e->check_until = m->stream_seq;
}

void hub_log_js_demand_renew(struct hub_log_js *js, struct js_session *e)
{
    if (!js->on_demand || runner_subject(e) || !js->connected)
        return;
    log_warn("cluster: %s: its consumer is silent; making it again after stream seq %" PRIu64,
             e->subject, e->last_stream_seq);
    watch_close(js, e);
    watch_open(js, e);
}

void hub_log_js_demand_applied(struct hub_log_js *js, struct js_session *e, uint64_t stream_seq)
{
    if (e->demand == DEMAND_OPENING || e->demand == DEMAND_HEAD)
        e->demand_since_ns = clock_monotonic_ns(); /* a long log still coming is no stall */
    if (e->demand == DEMAND_HEAD && e->demand_until && stream_seq >= e->demand_until)
        become_current(js, e);
}

void hub_log_js_on_watched(void *arg, uint64_t id, int ok)
{
    struct hub_log_js *js = arg;

    if (id == js->runners_watch) {
        if (ok) {
            js->runners_caught = 1;
            hub_log_js_check_caught_up(js);
        } else if (js_link_watch(js->link, CLUSTER_RUNNERS_FILTER, 0, &js->runners_watch) != 0) {
            js->runners_watch = 0; /* the sweep tries again */
        }
        return;
    }
    for (struct js_session *e = hub_log_js_session_first(js); e; e = hub_log_js_session_next(js, e))
        if (e->watch_id == id && e->demand == DEMAND_OPENING) {
            log_debug("cluster: %s: consumer %" PRIu64 " %s", e->subject, id,
                      ok ? "caught up" : "could not be made");
            if (!ok) {
                e->watch_id = 0;
                set_demand(e, DEMAND_NONE); /* made again while in use */
                return;
            }
            set_demand(e, DEMAND_HEAD);
            ask_head(js, e);
            return;
        }
}

void hub_log_js_demand_ready(struct hub_log_js *js)
{
    if (js->on_demand && !js->runners_watch &&
        js_link_watch(js->link, CLUSTER_RUNNERS_FILTER, 0, &js->runners_watch) != 0)
        js->runners_watch = 0;
}

/* 1 while E has a use on this node besides its readers: frames to write
 * or producers waiting. */
static int writing(const struct js_session *e)
{
    return e->out_head || e->fly || !list_is_empty(&e->waits);
}

/* 1 while a pane of this node reads E's copy. */
static int read_here(const struct hub_log_js *js, const struct js_session *e)
{
    struct session *s = e->id[0] ? session_lookup(js->reg, e->id, strlen(e->id)) : NULL;

    return s && s->watchers.count > 0;
}

/* Tells E's readers that its copy cannot be made current (now: all of
 * them; else those past their deadline).  Returns 1 while any is left. */
static int readers_fail(struct js_session *e, uint64_t now)
{
    while (!list_is_empty(&e->readers)) {
        struct hub_log_wait *w = hub_log_wait_of(list_first(&e->readers));
        if (now && w->deadline_ns > now)
            return 1;
        hub_log_wait_cancel(w);
        w->done(w, 0);
    }
    return 0;
}

static void sweep(struct hub_log_js *js, struct js_session *e, uint64_t now)
{
    int readers = readers_fail(e, js->connected ? now : 0);

    if (read_here(js, e))
        e->used_ns = now;
    if (!js->connected)
        return; /* consumers and lookups wait for the connection */
    switch (e->demand) {
    case DEMAND_NONE:
        if (readers || writing(e))
            watch_open(js, e);
        break;
    case DEMAND_OPENING:
        if (now - e->demand_since_ns >= DEMAND_STALL_NS) {
            log_warn("cluster: %s: its consumer stopped delivering for 10 s; making it again",
                     e->subject);
            watch_close(js, e);
            watch_open(js, e);
        }
        break;
    case DEMAND_HEAD:
        if (e->demand_until && now - e->demand_since_ns >= DEMAND_STALL_NS) {
            /* The frames stream holds the message the heads stream named,
             * and the consumer of its subject did not deliver it: the
             * consumer is dead (its server lost, a reset libnats never
             * finished).  Asking the heads stream again would name the
             * same message for ever; a new consumer delivers it. */
            log_warn("cluster: %s: its consumer did not deliver stream seq %" PRIu64
                     " and nothing else for 10 s; making it again",
                     e->subject, e->demand_until);
            watch_close(js, e);
            watch_open(js, e);
            break;
        }
        if (!e->head_asking && !e->demand_until)
            ask_head(js, e);
        break;
    case DEMAND_CURRENT:
        if (!readers && !writing(e) && !e->in_flight && now - e->used_ns >= js->linger_ns) {
            watch_close(js, e);
        } else if (!writing(e) && read_here(js, e) && !e->checking &&
                   now - e->check_ns >= DEMAND_CHECK_NS) {
            /* A writer here notices a silent consumer by its batches;
             * a pane alone would not. */
            uint64_t id;
            e->check_ns = now;
            if (js_link_last(js->link, e->subject, on_demand_check, js, &id) == 0)
                e->checking = 1;
        }
        break;
    }
}

/* Every DEMAND_SWEEP_MS: readers past their deadline (all of them while
 * NATS is unreachable) are answered, consumers made or made again,
 * lookups asked again, unused sessions let go. */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    uint64_t now = clock_monotonic_ns();

    if (js->got_ready && js->connected && !js->runners_watch)
        hub_log_js_demand_ready(js);
    for (struct js_session *e = hub_log_js_session_first(js); e; e = hub_log_js_session_next(js, e))
        if (!runner_subject(e))
            sweep(js, e, now);
    event_add(js->demand_timer, &(struct timeval){0, DEMAND_SWEEP_MS * 1000});
}

int hub_log_js_demand_init(struct hub_log_js *js, uint32_t linger_ms)
{
    if (!js->on_demand)
        return 0;
    js->linger_ns = (uint64_t)linger_ms * 1000000;
    js->demand_timer = evtimer_new(js->base, on_sweep, js);
    if (!js->demand_timer)
        return -1;
    event_add(js->demand_timer, &(struct timeval){0, DEMAND_SWEEP_MS * 1000});
    return 0;
}

void hub_log_js_demand_free(struct hub_log_js *js)
{
    if (js->demand_timer)
        event_free(js->demand_timer);
    js->demand_timer = NULL;
}

void hub_log_js_prepare(void *impl, struct session *s, struct hub_log_wait *w)
{
    struct hub_log_js *js = impl;
    char subject[SUBJECT_MAX];
    struct js_session *e;

    cluster_wire_subject(session_id(s), 0, subject);
    e = hub_log_js_session_get(js, subject, session_id(s), 1);
    if (!e) {
        w->done(w, 0);
        return;
    }
    if (hub_log_js_demand(js, e)) {
        w->done(w, 1);
        return;
    }
    w->deadline_ns = clock_monotonic_ns() + js->wait_ns;
    list_insert_tail(&e->readers, &w->link);
}

int hub_log_js_reads(void *impl, struct session *s, uint64_t *newest)
{
    struct hub_log_js *js = impl;
    char subject[SUBJECT_MAX];
    const struct js_session *e;

    if (!js->on_demand)
        return 1;
    cluster_wire_subject(session_id(s), 0, subject);
    e = hub_log_js_session_get(js, subject, NULL, 0);
    if (e && e->demand == DEMAND_CURRENT)
        return 1;
    *newest = e ? e->told_last_seq : 0;
    return 0;
}

/* This node's copy of session ID[0..LEN), made (an empty ring, STARTING)
 * when it has none; a retained ended copy is taken as it is, never
 * reopened.  Returns NULL when it cannot be made. */
static struct session *copy_of(struct hub_log_js *js, const char *id, size_t len)
{
    struct session *s = session_lookup(js->reg, id, len);

    if (!s && session_open(js->reg, id, len, &s) < 0)
        return NULL;
    return s;
}

/* Every node reads the whole bus, so a session's status there is known on
 * every node, read or not: a copy this node does not read takes its
 * state from there, as a copy that is read takes it from the state
 * frames.  The copy is made for it (an empty ring) when this node has
 * none, so GetAgentStatus answers alike on every node; an event of any
 * other kind makes one too, STARTING as a copy that reads the frames
 * starts, for a session whose agent has not said a state yet. */
void hub_log_js_demand_status(struct hub_log_js *js, const void *payload, size_t len)
{
    char id[SESSION_MAX_ID + 1], subject[SUBJECT_MAX];
    const char *raw;
    size_t id_len;
    uint64_t last_seq = 0;
    int state;
    struct js_session *e;
    struct session *s;

    if (!js->on_demand || hub_event_session_id(payload, len, &raw, &id_len) != 0 || id_len == 0 ||
        id_len > SESSION_MAX_ID || memchr(raw, 0, id_len))
        return;
    state = hub_event_status(payload, len, &last_seq);
    if (state < 0) {
        /* Not a status: only a session this node has never heard of
         * needs anything (its copy, STARTING). */
        (void)copy_of(js, raw, id_len);
        return;
    }
    if (state == 0)
        return;
    memcpy(id, raw, id_len);
    id[id_len] = '\0';
    cluster_wire_subject(id, 0, subject);
    e = hub_log_js_session_get(js, subject, id, 1);
    if (!e)
        return;
    if (last_seq > e->told_last_seq)
        e->told_last_seq = last_seq;
    if (e->demand == DEMAND_CURRENT)
        return; /* its state frames say it */
    s = copy_of(js, id, id_len);
    if (s && !session_is_ended(s))
        arbiter_announce(session_arbiter(s), (enum arbiter_state)state);
}
