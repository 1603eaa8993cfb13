#include "cluster/js_link_internal.h"

#include <event2/event.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

void js_link_post(struct js_link *link, struct js_event *ev)
{
    int was_empty;
    char byte = 1;

    ev->next = NULL;
    pthread_mutex_lock(&link->lock);
    if (atomic_load(&link->stopping)) {
        /* js_link_free drained the queue: nobody reads it any more. */
        pthread_mutex_unlock(&link->lock);
        js_link_event_free(ev);
        return;
    }
    was_empty = link->head == NULL;
    if (link->tail)
        link->tail->next = ev;
    else
        link->head = ev;
    link->tail = ev;
    pthread_mutex_unlock(&link->lock);
    /* A full pipe already holds a wake-up: the loop drains everything. */
    if (was_empty && write(link->pipe_fds[1], &byte, 1) < 0 && errno != EAGAIN)
        log_warn("cluster: cannot wake the loop: %s", strerror(errno));
}

struct js_event *js_link_event_alloc(enum js_event_kind kind)
{
    struct js_event *ev = calloc(1, sizeof(*ev));

    if (ev)
        ev->kind = kind;
    return ev;
}

void js_link_event_free(struct js_event *ev)
{
    if (!ev)
        return;
    natsMsg_Destroy(ev->msg);
    free(ev->subject);
    free(ev);
}

void js_link_lookup_free(struct js_lookup *l)
{
    js_link_event_free(l->ev);
    free(l);
}

void js_link_msg_fill(const struct js_link *link, natsMsg *msg, uint64_t stream_seq,
                      struct js_link_msg *m)
{
    const char *node = NULL;

    memset(m, 0, sizeof(*m));
    m->subject = natsMsg_GetSubject(msg);
    m->stream_seq = stream_seq;
    m->data = (const uint8_t *)natsMsg_GetData(msg);
    m->len = (size_t)natsMsg_GetDataLength(msg);
    if (natsMsgHeader_Get(msg, "Agenthub-Seq", &m->seq_header) != NATS_OK)
        m->seq_header = NULL;
    if (natsMsgHeader_Get(msg, "Agenthub-At", &m->at_header) != NATS_OK)
        m->at_header = NULL;
    if (natsMsgHeader_Get(msg, "Agenthub-Batch", &m->batch_header) != NATS_OK)
        m->batch_header = NULL;
    if (natsMsgHeader_Get(msg, "Agenthub-Node", &node) != NATS_OK)
        node = NULL;
    m->node_header = node;
    if (node && link->config.node_id)
        m->from_self = strcmp(node, link->config.node_id) == 0;
}

static void dispatch_msg(struct js_link *link, struct js_event *ev)
{
    struct js_link_msg m;

    js_link_msg_fill(link, ev->msg, ev->seq, &m);
    m.pending = ev->pending;
    if (ev->kind == JS_EV_FRAMES)
        link->events.frames(link->arg, &m);
    else
        link->events.bus(link->arg, &m);
}

/* The waiter of request ID, taken off the list; NULL when it was
 * cancelled. */
static struct js_pending *pending_take(struct js_link *link, uint64_t id)
{
    for (struct js_pending **pp = &link->pending; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            struct js_pending *p = *pp;
            *pp = p->next;
            return p;
        }
    return NULL;
}

/* A lookup's outcome: its waiter, once. */
static void dispatch_last(struct js_link *link, struct js_event *ev)
{
    struct js_pending *p = pending_take(link, ev->request);
    struct js_link_msg m;

    if (!p)
        return;
    if (ev->last == JS_LAST_FOUND || ev->last == JS_LAST_LIVE) {
        js_link_msg_fill(link, ev->msg, ev->seq, &m);
        p->last_fn(p->arg, ev->subject, ev->last, &m);
    } else {
        p->last_fn(p->arg, ev->subject, ev->last, NULL);
    }
    free(p);
}

/* The answer to request <inbox>.<id>: its waiter, once. */
static void dispatch_reply(struct js_link *link, struct js_event *ev)
{
    const char *subject = natsMsg_GetSubject(ev->msg);
    struct js_pending *p;

    if (strlen(subject) <= link->inbox_len + 1)
        return;
    p = pending_take(link, strtoull(subject + link->inbox_len + 1, NULL, 10));
    if (!p)
        return;
    p->fn(p->arg, natsMsg_IsNoResponders(ev->msg), (const uint8_t *)natsMsg_GetData(ev->msg),
          (size_t)natsMsg_GetDataLength(ev->msg));
    free(p);
}

static void dispatch(struct js_link *link, struct js_event *ev)
{
    switch (ev->kind) {
    case JS_EV_READY:
        link->events.ready(link->arg, ev->epoch, ev->frames_last, ev->bus_last);
        break;
    case JS_EV_FRAMES:
    case JS_EV_BUS:
        dispatch_msg(link, ev);
        break;
    case JS_EV_ACK: {
        const char *batch = NULL;
        if (ev->ack == JS_ACK_CONFLICT || ev->ack == JS_ACK_DUPLICATE)
            link->stats.conflicts++;
        else if (ev->ack == JS_ACK_FAILED)
            link->stats.publish_failures++;
        if (natsMsgHeader_Get(ev->msg, "Agenthub-Batch", &batch) != NATS_OK)
            batch = NULL;
        link->events.ack(link->arg, natsMsg_GetSubject(ev->msg), batch, ev->ack, ev->seq);
        break;
    }
    case JS_EV_CONNECTION:
        link->events.connection(link->arg, ev->up);
        break;
    case JS_EV_REQUEST:
        if (!ev->serve->dead)
            ev->serve->fn(ev->serve->arg, (const uint8_t *)natsMsg_GetData(ev->msg),
                          (size_t)natsMsg_GetDataLength(ev->msg), natsMsg_GetReply(ev->msg));
        break;
    case JS_EV_REPLY:
        dispatch_reply(link, ev);
        break;
    case JS_EV_LAST:
        dispatch_last(link, ev);
        break;
    case JS_EV_WATCH:
        if (link->events.watched)
            link->events.watched(link->arg, ev->request, ev->ok);
        break;
    }
}

/* The loop's side of the queue: everything posted so far, in order. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    struct js_link *link = arg;
    struct js_event *ev, *next;
    char buf[64];

    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    pthread_mutex_lock(&link->lock);
    ev = link->head;
    link->head = link->tail = NULL;
    pthread_mutex_unlock(&link->lock);
    for (; ev; ev = next) {
        next = ev->next;
        dispatch(link, ev);
        js_link_event_free(ev);
    }
}

/* --- libnats's threads ---------------------------------------------------- */

/* *AT = max(*AT, V), from any thread. */
static void raise_to(atomic_ullong *at, uint64_t v)
{
    unsigned long long seen = atomic_load(at);

    while (seen < v && !atomic_compare_exchange_weak(at, &seen, v)) {
    }
}

/* An event of KIND that owns MSG, or NULL (MSG destroyed) when memory is
 * short: a callback hands every message it gets to the loop or drops it. */
static struct js_event *event_with_msg(enum js_event_kind kind, natsMsg *msg)
{
    struct js_event *ev = js_link_event_alloc(kind);

    if (!ev) {
        natsMsg_Destroy(msg);
        return NULL;
    }
    ev->msg = msg;
    return ev;
}

long long js_link_queue_msg(struct js_link *link, natsMsg *msg, enum js_event_kind kind,
                            atomic_ullong *next)
{
    jsMsgMetaData *meta = NULL;
    struct js_event *ev = event_with_msg(kind, msg);
    long long pending;

    if (!ev)
        return -1;
    if (natsMsg_GetMetaData(&meta, msg) != NATS_OK) {
        /* Without its sequence the message cannot be placed; the ordered
         * consumer's next message shows the gap to the reader. */
        natsMsg_Destroy(msg);
        free(ev);
        return -1;
    }
    ev->seq = meta->Sequence.Stream;
    ev->pending = meta->NumPending;
    pending = (long long)meta->NumPending;
    jsMsgMetaData_Destroy(meta);
    raise_to(next, ev->seq + 1);
    js_link_post(link, ev);
    return pending;
}

static void queue_msg(struct js_link *link, natsMsg *msg, enum js_event_kind kind)
{
    js_link_queue_msg(link, msg, kind, kind == JS_EV_FRAMES ? &link->frames_next : &link->bus_next);
}

void js_link_on_frames_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    queue_msg(closure, msg, JS_EV_FRAMES);
}

void js_link_on_bus_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    queue_msg(closure, msg, JS_EV_BUS);
}

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    struct js_link *link = closure;
    struct js_event *ev = event_with_msg(JS_EV_ACK, msg);

    if (!ev)
        return;
    if (pa && !pa->Duplicate) {
        ev->ack = JS_ACK_OK;
        ev->seq = pa->Sequence;
    } else if (pa) {
        /* A message with this Nats-Msg-Id was stored first. */
        ev->ack = JS_ACK_DUPLICATE;
        ev->seq = pa->Sequence;
    } else if (pae && pae->ErrCode == JSStreamWrongLastSequenceErr) {
        unsigned long long last;
        ev->ack = JS_ACK_CONFLICT;
        /* JetStream names the subject's real last sequence in its text. */
        ev->seq = pae->ErrText && sscanf(pae->ErrText, "wrong last sequence: %llu", &last) == 1
                      ? (uint64_t)last
                      : UINT64_MAX;
    } else {
        ev->ack = JS_ACK_FAILED;
    }
    js_link_post(link, ev);
}

/* The link's connection, or with PUB its publishing one, went UP or down:
 * the link is connected while both are, and the loop hears each change. */
static void post_connection(struct js_link *link, int pub, int up)
{
    int both;

    if (!up)
        atomic_fetch_add(&link->disconnects, 1);
    pthread_mutex_lock(&link->state_lock);
    *(pub ? &link->pub_up : &link->nc_up) = up;
    both = link->nc_up && link->pub_up;
    if (atomic_exchange(&link->connected, both) != both) {
        struct js_event *ev = js_link_event_alloc(JS_EV_CONNECTION);
        if (ev) {
            ev->up = both;
            js_link_post(link, ev);
        }
    }
    pthread_mutex_unlock(&link->state_lock);
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    post_connection(closure, 0, 0);
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    struct js_link *link = closure;

    atomic_store(&link->resubscribe, 1);
    post_connection(link, 0, 1);
}

static void on_connected(natsConnection *nc, void *closure)
{
    post_connection(closure, 0, 1);
}

static void on_pub_disconnected(natsConnection *nc, void *closure)
{
    post_connection(closure, 1, 0);
}

static void on_pub_connected(natsConnection *nc, void *closure)
{
    post_connection(closure, 1, 1);
}

static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    struct js_serve *serve = closure;
    struct js_event *ev = event_with_msg(JS_EV_REQUEST, msg);

    if (!ev)
        return;
    ev->serve = serve;
    js_link_post(serve->link, ev);
}

static void on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    struct js_event *ev = event_with_msg(JS_EV_REPLY, msg);

    if (ev)
        js_link_post(closure, ev);
}

/* --- the loop's API ---------------------------------------------------------- */

static int split_urls(struct js_link *link, char *err, size_t errlen)
{
    char *save = NULL, *tok;

    link->urls_copy = strdup(link->config.urls);
    if (!link->urls_copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (tok = strtok_r(link->urls_copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strncmp(tok, "nats://", 7) != 0 || strlen(tok) < 8) {
            snprintf(err, errlen, "%s: not a nats://HOST:PORT URL", tok);
            return -1;
        }
        if (link->nurls == JS_MAX_URLS) {
            snprintf(err, errlen, "more than %d URLs", JS_MAX_URLS);
            return -1;
        }
        link->urls[link->nurls++] = tok;
    }
    if (link->nurls == 0) {
        snprintf(err, errlen, "no URL");
        return -1;
    }
    return 0;
}

/* Options of the link's connection, or with PUB of its publishing one.
 * That one writes each publish to the socket from the calling thread (the
 * loop) at once: by default libnats hands it to a flusher thread that
 * waits a millisecond for more before writing, and a session's next batch
 * waits for the previous one's acknowledgment, so that millisecond would
 * come twice into every frame's latency.  A server that takes no bytes
 * holds the loop at most JS_WRITE_DEADLINE_MS; the connection is then
 * dropped and made again (the flusher held the connection's lock, and so
 * the loop's next publish, as long, without any bound).  The consumers
 * stay on the other connection: libnats 3.4 remaking an ordered consumer
 * crashes when a write fails at once, which only writing at once allows. */
static int make_options(struct js_link *link, int pub)
{
    natsOptions *o = NULL;

    if (natsOptions_Create(&o) != NATS_OK)
        return -1;
    if (pub)
        link->pub_opts = o;
    else
        link->opts = o;
    if ((pub && (natsOptions_SetSendAsap(o, true) != NATS_OK ||
                 natsOptions_SetWriteDeadline(o, JS_WRITE_DEADLINE_MS) != NATS_OK)) ||
        natsOptions_SetServers(o, link->urls, link->nurls) != NATS_OK ||
        natsOptions_SetName(o, link->config.node_id) != NATS_OK ||
        natsOptions_SetMaxReconnect(o, -1) != NATS_OK ||
        natsOptions_SetReconnectWait(o, 200) != NATS_OK ||
        natsOptions_SetPingInterval(o, 1000) != NATS_OK ||
        natsOptions_SetMaxPingsOut(o, 2) != NATS_OK || natsOptions_SetTimeout(o, 1000) != NATS_OK ||
        natsOptions_SetDisconnectedCB(o, pub ? on_pub_disconnected : on_disconnected, link) !=
            NATS_OK ||
        natsOptions_SetReconnectedCB(o, pub ? on_pub_connected : on_reconnected, link) != NATS_OK ||
        natsOptions_SetRetryOnFailedConnect(o, true, pub ? on_pub_connected : on_connected, link) !=
            NATS_OK)
        return -1;
    return 0;
}

struct js_link *js_link_new(struct event_base *base, const struct js_link_config *config,
                            const struct js_link_events *events, void *arg, char *err,
                            size_t errlen)
{
    struct js_link *link = calloc(1, sizeof(*link));
    jsOptions jo;
    natsStatus s;

    if (!link) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    link->base = base;
    link->config = *config;
    link->events = *events;
    link->arg = arg;
    link->pipe_fds[0] = link->pipe_fds[1] = -1;
    pthread_mutex_init(&link->lock, NULL);
    pthread_mutex_init(&link->state_lock, NULL);
    pthread_cond_init(&link->setup_cond, NULL);
    if (split_urls(link, err, errlen) != 0)
        goto fail;
    if (pipe2(link->pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    link->wake = event_new(base, link->pipe_fds[0], EV_READ | EV_PERSIST, on_wake, link);
    if (!link->wake || event_add(link->wake, NULL) != 0 || make_options(link, 0) != 0 ||
        make_options(link, 1) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int pub = 0; pub <= 1; pub++) {
        s = natsConnection_Connect(pub ? &link->pub_nc : &link->nc,
                                   pub ? link->pub_opts : link->opts);
        if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
            snprintf(err, errlen, "cannot connect: %s", natsStatus_GetText(s));
            goto fail;
        }
        /* Not yet connected: the connected handler tells (perhaps
         * already has). */
        pthread_mutex_lock(&link->state_lock);
        if (s == NATS_OK)
            *(pub ? &link->pub_up : &link->nc_up) = 1;
        atomic_store(&link->connected, link->nc_up && link->pub_up);
        pthread_mutex_unlock(&link->state_lock);
    }
    jsOptions_Init(&jo);
    jo.Wait = 2000;
    if (natsConnection_JetStream(&link->js, link->nc, &jo) != NATS_OK) {
        snprintf(err, errlen, "cannot make a JetStream context");
        goto fail;
    }
    jo.PublishAsync.MaxPending = 1 << 20;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.AckHandlerClosure = link;
    if (natsConnection_JetStream(&link->pub_js, link->pub_nc, &jo) != NATS_OK) {
        snprintf(err, errlen, "cannot make a JetStream context");
        goto fail;
    }
    if (pthread_create(&link->setup_thread, NULL, js_link_setup_main, link) != 0) {
        snprintf(err, errlen, "cannot start a thread");
        goto fail;
    }
    link->setup_started = 1;
    return link;
fail:
    js_link_free(link);
    return NULL;
}

void js_link_free(struct js_link *link)
{
    struct js_event *ev, *next;

    if (!link)
        return;
    atomic_store(&link->stopping, 1);
    pthread_mutex_lock(&link->lock);
    pthread_cond_signal(&link->setup_cond);
    pthread_mutex_unlock(&link->lock);
    if (link->setup_started)
        pthread_join(link->setup_thread, NULL);
    if (link->inbox_sub)
        natsSubscription_Destroy(link->inbox_sub);
    for (struct js_serve *s = link->serves; s; s = s->next)
        natsSubscription_Destroy(s->sub);
    if (link->frames_sub)
        natsSubscription_Destroy(link->frames_sub);
    if (link->bus_sub)
        natsSubscription_Destroy(link->bus_sub);
    js_watch_drop_subs(link);
    if (link->nc)
        natsConnection_Close(link->nc);
    if (link->pub_nc)
        natsConnection_Close(link->pub_nc);
    jsCtx_Destroy(link->js);
    jsCtx_Destroy(link->pub_js);
    natsConnection_Destroy(link->nc);
    natsConnection_Destroy(link->pub_nc);
    natsOptions_Destroy(link->opts);
    natsOptions_Destroy(link->pub_opts);
    /* What was queued goes while libnats is still open; what its threads
     * post from now on is dropped by post() itself. */
    pthread_mutex_lock(&link->lock);
    ev = link->head;
    link->head = link->tail = NULL;
    pthread_mutex_unlock(&link->lock);
    for (; ev; ev = next) {
        next = ev->next;
        js_link_event_free(ev);
    }
    while (link->lookups_head) {
        struct js_lookup *l = link->lookups_head;
        link->lookups_head = l->next;
        js_link_lookup_free(l);
    }
    /* libnats calls the connection handlers on its own threads even after
     * the close: the link must outlive them. */
    nats_CloseAndWait(2000);
    js_watch_free_all(link);
    if (link->wake)
        event_free(link->wake);
    if (link->pipe_fds[0] >= 0)
        close(link->pipe_fds[0]);
    if (link->pipe_fds[1] >= 0)
        close(link->pipe_fds[1]);
    pthread_mutex_destroy(&link->lock);
    pthread_mutex_destroy(&link->state_lock);
    pthread_cond_destroy(&link->setup_cond);
    while (link->serves) {
        struct js_serve *s = link->serves;
        link->serves = s->next;
        free(s);
    }
    while (link->pending) {
        struct js_pending *p = link->pending;
        link->pending = p->next;
        free(p);
    }
    free(link->urls_copy);
    free(link);
}

int js_link_connected(const struct js_link *link)
{
    return atomic_load(&((struct js_link *)link)->connected);
}

static int publish(struct js_link *link, natsMsg *msg, const char *msg_id, uint64_t expect_last,
                   int expect)
{
    jsPubOptions po;
    natsStatus s;

    jsPubOptions_Init(&po);
    po.MaxWait = link->config.publish_wait_ms;
    po.MsgId = msg_id;
    if (expect) {
        char v[24];
        /* Set by hand: libnats leaves a 0 out, and 0 means "none yet". */
        snprintf(v, sizeof(v), "%" PRIu64, expect_last);
        if (natsMsgHeader_Set(msg, "Nats-Expected-Last-Subject-Sequence", v) != NATS_OK) {
            natsMsg_Destroy(msg);
            return -1;
        }
    }
    s = js_PublishMsgAsync(link->pub_js, &msg, &po);
    natsMsg_Destroy(msg); /* NULL when libnats took it */
    if (s != NATS_OK) {
        link->stats.publish_failures++;
        return -1;
    }
    link->stats.publishes++;
    return 0;
}

int js_link_publish_frames(struct js_link *link, const char *subject, uint64_t seq,
                           uint64_t expect_last, const char *msg_id, uint64_t batch,
                           const void *data, size_t len)
{
    natsMsg *msg = NULL;
    char v[24], b[24];

    if (!atomic_load(&link->connected) || len > INT32_MAX)
        return -1;
    if (natsMsg_Create(&msg, subject, NULL, data, (int)len) != NATS_OK)
        return -1;
    snprintf(v, sizeof(v), "%" PRIu64, seq);
    snprintf(b, sizeof(b), "%" PRIu64, batch);
    if (natsMsgHeader_Set(msg, "Agenthub-Seq", v) != NATS_OK ||
        natsMsgHeader_Set(msg, "Agenthub-Batch", b) != NATS_OK ||
        (link->config.node_id &&
         natsMsgHeader_Set(msg, "Agenthub-Node", link->config.node_id) != NATS_OK)) {
        natsMsg_Destroy(msg);
        return -1;
    }
    return publish(link, msg, msg_id, expect_last, 1);
}

int js_link_publish_bus(struct js_link *link, uint64_t batch, int with_msg_id, const void *data,
                        size_t len)
{
    natsMsg *msg = NULL;
    char b[24], id[32];

    if (!atomic_load(&link->connected) || len > INT32_MAX)
        return -1;
    if (natsMsg_Create(&msg, JS_BUS_SUBJECT, NULL, data, (int)len) != NATS_OK)
        return -1;
    snprintf(b, sizeof(b), "%" PRIu64, batch);
    snprintf(id, sizeof(id), "bus-%" PRIu64, batch);
    if (natsMsgHeader_Set(msg, "Agenthub-Batch", b) != NATS_OK ||
        (link->config.node_id &&
         natsMsgHeader_Set(msg, "Agenthub-Node", link->config.node_id) != NATS_OK)) {
        natsMsg_Destroy(msg);
        return -1;
    }
    return publish(link, msg, with_msg_id ? id : NULL, 0, 0);
}

void js_link_stats(const struct js_link *link, struct js_link_stats *out)
{
    *out = link->stats;
    out->disconnects = atomic_load(&((struct js_link *)link)->disconnects);
}

/* --- request/reply ------------------------------------------------------------ */

int js_link_serve(struct js_link *link, const char *subject, const char *group,
                  js_link_request_fn fn, void *arg, void **handle)
{
    struct js_serve *serve = calloc(1, sizeof(*serve));

    if (!serve)
        return -1;
    serve->fn = fn;
    serve->arg = arg;
    serve->link = link;
    if (natsConnection_QueueSubscribe(&serve->sub, link->nc, subject, group, on_request, serve) !=
        NATS_OK) {
        free(serve);
        return -1;
    }
    serve->next = link->serves;
    link->serves = serve;
    *handle = serve;
    return 0;
}

void js_link_unserve(struct js_link *link, void *handle)
{
    struct js_serve *serve = handle;

    if (!serve || serve->dead)
        return;
    serve->dead = 1;
    natsSubscription_Unsubscribe(serve->sub);
}

int js_link_respond(struct js_link *link, const char *reply, const void *data, size_t len)
{
    if (!reply || !reply[0] || len > INT32_MAX)
        return -1;
    return natsConnection_Publish(link->nc, reply, data, (int)len) == NATS_OK ? 0 : -1;
}

int js_link_request(struct js_link *link, const char *subject, const void *data, size_t len,
                    js_link_reply_fn fn, void *arg, uint64_t *id)
{
    struct js_pending *p;
    char reply[96], wildcard[80];

    if (!atomic_load(&link->connected) || len > INT32_MAX)
        return -1;
    if (!link->inbox_sub) {
        natsInbox *inbox = NULL;
        if (natsInbox_Create(&inbox) != NATS_OK)
            return -1;
        snprintf(link->inbox, sizeof(link->inbox), "%s", (const char *)inbox);
        natsInbox_Destroy(inbox);
        link->inbox_len = strlen(link->inbox);
        snprintf(wildcard, sizeof(wildcard), "%s.*", link->inbox);
        if (natsConnection_Subscribe(&link->inbox_sub, link->nc, wildcard, on_reply, link) !=
            NATS_OK) {
            link->inbox_sub = NULL;
            return -1;
        }
        natsSubscription_SetPendingLimits(link->inbox_sub, -1, -1);
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    p->id = ++link->next_request;
    p->fn = fn;
    p->arg = arg;
    snprintf(reply, sizeof(reply), "%s.%" PRIu64, link->inbox, p->id);
    if (natsConnection_PublishRequest(link->nc, subject, reply, data, (int)len) != NATS_OK) {
        free(p);
        return -1;
    }
    p->next = link->pending;
    link->pending = p;
    *id = p->id;
    return 0;
}

int js_link_last(struct js_link *link, const char *subject, js_link_last_fn fn, void *arg,
                 uint64_t *id)
{
    size_t n = strlen(subject) + 1;
    struct js_pending *p = calloc(1, sizeof(*p));
    struct js_lookup *l = malloc(sizeof(*l) + n);
    struct js_event *ev = js_link_event_alloc(JS_EV_LAST);
    char *copy = strdup(subject);

    if (!p || !l || !ev || !copy) {
        free(p);
        free(l);
        free(ev);
        free(copy);
        return -1;
    }
    p->id = ev->request = ++link->next_request;
    p->last_fn = fn;
    p->arg = arg;
    ev->subject = copy;
    ev->last = JS_LAST_FAILED;
    l->ev = ev;
    l->next = NULL;
    memcpy(l->subject, subject, n);
    p->next = link->pending;
    link->pending = p;
    pthread_mutex_lock(&link->lock);
    if (link->lookups_tail)
        link->lookups_tail->next = l;
    else
        link->lookups_head = l;
    link->lookups_tail = l;
    pthread_cond_signal(&link->setup_cond);
    pthread_mutex_unlock(&link->lock);
    *id = p->id;
    return 0;
}

void js_link_request_cancel(struct js_link *link, uint64_t id)
{
    free(pending_take(link, id));
}

void js_link_refresh(struct js_link *link)
{
    atomic_store(&link->resubscribe, 1);
}
