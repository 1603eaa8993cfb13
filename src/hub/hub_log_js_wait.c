/* hub_log_js_wait: producers waiting until JetStream stored their frames
 * (struct hub_log_wait), for hub_log_jetstream.c: answered when the batch
 * carrying their last frame is stored, with the frames' final seqs, or
 * told UNAVAILABLE when it cannot be stored in time. */
#include <stdlib.h>

#include "common/clock.h"
#include "hub/hub_log_js_internal.h"

/* Holds W on E until its entries are applied or its deadline passes; the
 * wait timer runs while any wait is held. */
void hub_log_js_waits_hold(struct hub_log_js *js, struct js_session *e, struct hub_log_wait *w)
{
    w->deadline_ns = clock_monotonic_ns() + js->wait_ns;
    list_insert_head(&e->waits, &w->link);
    if (!evtimer_pending(js->wait_timer, NULL))
        event_add(js->wait_timer, &(struct timeval){0, 100 * 1000});
}

/* Answers E's waits whose frames are all stored (their last entry at or
 * before ORD).  A done callback may end other calls, which take their
 * waits back: the list is walked again from its head after each. */
void hub_log_js_waits_stored(struct js_session *e, uint64_t ord)
{
    for (;;) {
        struct list_node *node = list_first(&e->waits);
        struct hub_log_wait *w;

        while (node && hub_log_wait_of(node)->last_ord > ord)
            node = list_next(&e->waits, node);
        if (!(w = hub_log_wait_of(node)))
            return;
        hub_log_wait_cancel(w);
        w->done(w, 1);
    }
}

/* 1 when P is an entry of a keyed call (its origin an idempotency key). */
static int entry_keyed(const struct js_entry *p)
{
    struct cluster_wire_origin o;

    return hub_log_js_entry_origin(p, &o) == CLUSTER_ORIGIN_KEY;
}

/* A keyed call told UNAVAILABLE is sent again by its producer under the
 * same key, through this node or another, and that copy is the one that
 * counts.  Its entries here must not be stored later still: a node that
 * could not write for a while (cut off, paused) would write them after
 * everything stored meanwhile, and a copy remembers only the last
 * KEYS_KEPT keyed calls of a session, so past that many they would be
 * taken a second time.  Entries not yet sent go now; those in the batch in
 * flight are marked, since an attempt of it may be stored after all, and
 * go once the batch is known not stored.  A Runner's frames stay: its
 * resend is recognised by its runner_seq however late. */
void hub_log_js_withdraw(struct js_session *e, const struct hub_log_wait *w)
{
    struct js_entry **link = &e->out_head, *p, *prev = NULL;

    for (p = e->fly; p; p = p->next)
        if (p->ord >= w->first_ord && p->ord <= w->last_ord && entry_keyed(p))
            p->withdrawn = 1;
    while ((p = *link)) {
        if (p->ord < w->first_ord || p->ord > w->last_ord || !entry_keyed(p)) {
            prev = p;
            link = &p->next;
            continue;
        }
        *link = p->next;
        if (e->out_tail == p)
            e->out_tail = prev;
        e->out_frames -= entry_counts(p->kind);
        free(p);
    }
}

/* Tells E's waits their frames could not be stored in time: all of them,
 * or those past their deadline when NOW is not 0.  A keyed call's entries
 * are withdrawn (its producer sends them again under its key); other
 * frames stay queued and may still be stored (a Runner's are recognised
 * when it sends them again). */
void hub_log_js_waits_fail(struct hub_log_js *js, struct js_session *e, uint64_t now)
{
    for (;;) {
        struct list_node *node = list_first(&e->waits);
        struct hub_log_wait *w;

        while (node && now && hub_log_wait_of(node)->deadline_ns > now)
            node = list_next(&e->waits, node);
        if (!(w = hub_log_wait_of(node)))
            return;
        hub_log_wait_cancel(w);
        hub_log_js_withdraw(e, w);
        js->waits_failed++;
        w->done(w, 0);
    }
}

void hub_log_js_waits_timer(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    uint64_t now = clock_monotonic_ns();
    int waiting = 0;

    for (struct js_session *e = hub_log_js_session_first(js); e;
         e = hub_log_js_session_next(js, e)) {
        hub_log_js_waits_fail(js, e, now);
        waiting |= !list_is_empty(&e->waits);
    }
    if (waiting)
        event_add(js->wait_timer, &(struct timeval){0, 100 * 1000});
}

void hub_log_js_waits_number(struct js_session *e, uint64_t ord, uint64_t first_seq,
                             uint64_t last_seq)
{
    struct list_node *node;

    list_for_each (node, &e->waits) {
        struct hub_log_wait *w = hub_log_wait_of(node);
        if (w->first_ord == ord)
            w->first_seq = first_seq;
        if (w->last_ord == ord)
            w->last_seq = last_seq;
    }
}
