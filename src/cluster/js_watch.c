/* js_watch: consumers of one frames subject, made on demand (js_link.h).
 *
 * The loop queues requests (make, end); the setup thread carries them out,
 * since making or deleting a consumer is a blocking JetStream request.  A
 * watch's messages go to the loop like the whole stream's, and the loop
 * is told once the watch has delivered what its subject held when it was
 * made: at once when the consumer had nothing pending and had delivered
 * nothing, else after the first message that left nothing pending. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/js_link_internal.h"
#include "common/log.h"

/* Tells the loop that W caught up (OK 1) or could not be made (0). */
static void post_watched(struct js_link *link, uint64_t id, int ok)
{
    struct js_event *ev = js_link_event_alloc(JS_EV_WATCH);

    if (!ev)
        return; /* the loop asks again when a watch stays silent */
    ev->request = id;
    ev->ok = ok;
    js_link_post(link, ev);
}

static void on_watch_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    struct js_watch *w = closure;

    if (js_link_queue_msg(w->link, msg, JS_EV_FRAMES, &w->next_seq) == 0 &&
        !atomic_exchange(&w->caught, 1))
        post_watched(w->link, w->id, 1);
}

static void on_sub_complete(void *closure)
{
    struct js_watch *w = closure;

    atomic_fetch_sub(&w->subs_open, 1);
}

static void sub_close(natsSubscription *sub)
{
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
}

/* A new subscription for W from FROM.  Returns it, or NULL. */
static natsSubscription *subscribe(struct js_link *link, struct js_watch *w, uint64_t from)
{
    natsSubscription *sub;

    atomic_fetch_add(&w->subs_open, 1);
    sub = js_link_ordered_consumer(link, JS_FRAMES_STREAM, w->subject, on_watch_msg, w, from);
    if (!sub) {
        atomic_fetch_sub(&w->subs_open, 1);
        return NULL;
    }
    if (natsSubscription_SetOnCompleteCB(sub, on_sub_complete, w) != NATS_OK)
        atomic_fetch_sub(&w->subs_open, 1); /* closed already: no handler runs */
    return sub;
}

/* Makes the watch OP asks for; the loop hears whether it caught up. */
static void watch_open(struct js_link *link, const struct js_watch_op *op)
{
    size_t n = strlen(op->subject) + 1;
    struct js_watch *w = calloc(1, sizeof(*w) + n);
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;

    if (!w) {
        post_watched(link, op->id, 0);
        return;
    }
    w->link = link;
    w->id = op->id;
    w->from = op->from;
    memcpy(w->subject, op->subject, n);
    w->sub = subscribe(link, w, op->from);
    if (!w->sub) {
        free(w);
        post_watched(link, op->id, 0);
        return;
    }
    w->next = link->watches;
    link->watches = w;
    /* Nothing pending and nothing delivered: the subject held nothing
     * from FROM on, so the watch is caught up now.  Anything delivered
     * meanwhile says so itself when it leaves nothing pending. */
    if (natsSubscription_GetConsumerInfo(&ci, w->sub, NULL, &jerr) == NATS_OK) {
        if (ci->NumPending == 0 && ci->Delivered.Consumer == 0 && !atomic_exchange(&w->caught, 1))
            post_watched(link, w->id, 1);
        jsConsumerInfo_Destroy(ci);
        return;
    }
    /* Left as it is: a message that leaves nothing pending still tells,
     * and a watch that never does is made again by its user. */
    log_warn("cluster: consumer of %s: no info (%d)", w->subject, (int)jerr);
}

static void watch_close(struct js_link *link, uint64_t id)
{
    for (struct js_watch **pw = &link->watches; *pw; pw = &(*pw)->next) {
        struct js_watch *w = *pw;
        if (w->id != id)
            continue;
        *pw = w->next;
        w->next = link->watches_closed;
        link->watches_closed = w;
        if (w->sub)
            sub_close(w->sub);
        w->sub = NULL;
        return;
    }
}

void js_watch_run_ops(struct js_link *link)
{
    struct js_watch_op *op, *next;

    pthread_mutex_lock(&link->lock);
    op = link->watch_ops_head;
    link->watch_ops_head = link->watch_ops_tail = NULL;
    pthread_mutex_unlock(&link->lock);
    for (; op; op = next) {
        next = op->next;
        if (op->close)
            watch_close(link, op->id);
        else if (!atomic_load(&link->stopping))
            watch_open(link, op);
        free(op);
    }
}

int js_watch_resubscribe(struct js_link *link)
{
    for (struct js_watch *w = link->watches; w; w = w->next) {
        uint64_t next = atomic_load(&w->next_seq);
        natsSubscription *sub = subscribe(link, w, next ? next : w->from);
        if (!sub)
            return -1;
        if (w->sub)
            sub_close(w->sub);
        w->sub = sub;
    }
    return 0;
}

void js_watch_reap(struct js_link *link)
{
    for (struct js_watch **pw = &link->watches_closed; *pw;) {
        struct js_watch *w = *pw;
        if (atomic_load(&w->subs_open) > 0) {
            pw = &w->next;
            continue;
        }
        *pw = w->next;
        free(w);
    }
}

void js_watch_drop_subs(struct js_link *link)
{
    for (struct js_watch *w = link->watches; w; w = w->next)
        if (w->sub) {
            natsSubscription_Destroy(w->sub);
            w->sub = NULL;
        }
}

void js_watch_free_all(struct js_link *link)
{
    struct js_watch *lists[2] = {link->watches, link->watches_closed};

    for (int i = 0; i < 2; i++)
        while (lists[i]) {
            struct js_watch *w = lists[i];
            lists[i] = w->next;
            free(w);
        }
    link->watches = link->watches_closed = NULL;
    while (link->watch_ops_head) {
        struct js_watch_op *op = link->watch_ops_head;
        link->watch_ops_head = op->next;
        free(op);
    }
}

/* Queues OP for the setup thread. */
static void op_queue(struct js_link *link, struct js_watch_op *op)
{
    op->next = NULL;
    pthread_mutex_lock(&link->lock);
    if (link->watch_ops_tail)
        link->watch_ops_tail->next = op;
    else
        link->watch_ops_head = op;
    link->watch_ops_tail = op;
    pthread_cond_signal(&link->setup_cond);
    pthread_mutex_unlock(&link->lock);
}

int js_link_watch(struct js_link *link, const char *subject, uint64_t from, uint64_t *id)
{
    size_t n = strlen(subject) + 1;
    struct js_watch_op *op = calloc(1, sizeof(*op) + n);

    if (!op)
        return -1;
    op->id = *id = ++link->next_watch;
    op->from = from;
    memcpy(op->subject, subject, n);
    op_queue(link, op);
    return 0;
}

void js_link_unwatch(struct js_link *link, uint64_t id)
{
    struct js_watch_op *op = calloc(1, sizeof(*op) + 1);

    /* Short of memory the watch stays: its messages are applied once, and
     * its consumer goes with the connection. */
    if (!op)
        return;
    op->id = id;
    op->close = 1;
    op_queue(link, op);
}
