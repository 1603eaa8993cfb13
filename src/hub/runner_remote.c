#include "hub/runner_remote.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/js_link.h"
#include "common/log.h"
#include "store/store.h"

#define RUNNER_SUBJECT_PREFIX "agenthub.runner."
#define RUNNER_GROUP          "agenthub-runners"
#define SUBJECT_LEN           (sizeof(RUNNER_SUBJECT_PREFIX) + 2 * STORE_ID_MAX)
/* The sender's margin over the holder's own deadline. */
#define MARGIN_MS 2000
/* Answer: outcome (1), code (4, little-endian), detail. */
#define ANSWER_HEAD 5u

/* A Runner this node holds: its subject is served. */
struct hold {
    struct hold *next;
    void *serve;
    struct runner_remote *remote;
    char id[STORE_ID_MAX];
};

/* A command sent to another node, waiting for its answer. */
struct sent {
    struct sent *next;
    struct runner_remote *remote;
    uint64_t request;
    struct event *timer;
    runner_command_done done;
    void *arg;
};

/* A command taken for a held Runner, waiting for that Runner. */
struct taken {
    struct runner_remote *remote;
    char reply[128];
};

struct runner_remote {
    struct hub *ctx;
    struct js_link *link;
    struct event_base *base;
    struct hold *holds;
    struct sent *sent;
};

static void subject_for(const char *runner_id, char *out)
{
    static const char hex[] = "0123456789abcdef";
    char *p = out + sprintf(out, "%s", RUNNER_SUBJECT_PREFIX);

    for (; *runner_id && p < out + SUBJECT_LEN - 3; runner_id++) {
        *p++ = hex[(uint8_t)*runner_id >> 4];
        *p++ = hex[(uint8_t)*runner_id & 15];
    }
    *p = '\0';
}

struct runner_remote *runner_remote_new(struct hub *ctx, struct event_base *base,
                                        struct js_link *link)
{
    struct runner_remote *remote = calloc(1, sizeof(*remote));

    if (!remote)
        return NULL;
    remote->ctx = ctx;
    remote->link = link;
    remote->base = base;
    return remote;
}

static void sent_free(struct runner_remote *remote, struct sent *s)
{
    struct sent **pp;

    for (pp = &remote->sent; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    js_link_request_cancel(remote->link, s->request);
    event_free(s->timer);
    free(s);
}

void runner_remote_free(struct runner_remote *remote)
{
    if (!remote)
        return;
    while (remote->sent)
        sent_free(remote, remote->sent);
    while (remote->holds) {
        struct hold *h = remote->holds;
        remote->holds = h->next;
        js_link_unserve(remote->link, h->serve);
        free(h);
    }
    free(remote);
}

/* --- the holder's side -------------------------------------------------------- */

static void answer(struct runner_remote *remote, const char *reply, enum runner_outcome outcome,
                   int code, const char *detail)
{
    uint8_t buf[ANSWER_HEAD + 256];
    size_t n = strlen(detail ? detail : "");

    if (n > sizeof(buf) - ANSWER_HEAD)
        n = sizeof(buf) - ANSWER_HEAD;
    buf[0] = (uint8_t)outcome;
    for (int i = 0; i < 4; i++)
        buf[1 + i] = (uint8_t)((uint32_t)code >> (8 * i));
    if (n)
        memcpy(buf + ANSWER_HEAD, detail, n);
    if (js_link_respond(remote->link, reply, buf, ANSWER_HEAD + n) != 0)
        log_warn("cluster: cannot answer a control command: NATS unreachable");
}

static void taken_done(void *arg, enum runner_outcome outcome, int code, const char *detail)
{
    struct taken *t = arg;

    answer(t->remote, t->reply, outcome, code, detail);
    free(t);
}

/* A command for held Runner H from another node: byte 0 says whether the
 * sender waits, the rest is the encoded SessionsResponse. */
static void on_request(void *arg, const uint8_t *data, size_t len, const char *reply)
{
    struct hold *h = arg;
    struct runner_remote *remote = h->remote;
    Compass__V1__SessionsResponse *command;
    struct taken *t = NULL;
    int waits, rv;

    if (len < 1)
        return;
    waits = data[0] && reply && reply[0];
    command = compass__v1__sessions_response__unpack(NULL, len - 1, data + 1);
    if (!command) {
        if (waits)
            answer(remote, reply, RUNNER_NOT_SENT, 0, "the command did not decode");
        return;
    }
    if (waits) {
        t = calloc(1, sizeof(*t));
        if (t) {
            t->remote = remote;
            snprintf(t->reply, sizeof(t->reply), "%s", reply);
        }
    }
    if (waits && !t) {
        answer(remote, reply, RUNNER_NOT_SENT, 0, "out of memory");
        compass__v1__sessions_response__free_unpacked(command, NULL);
        return;
    }
    rv = runner_command_send(remote->ctx, h->id, command, t ? taken_done : NULL, t, NULL);
    compass__v1__sessions_response__free_unpacked(command, NULL);
    if (rv != RUNNER_SEND_QUEUED && t) {
        answer(remote, reply, RUNNER_NOT_SENT, 0,
               rv == RUNNER_SEND_NOT_CONNECTED ? "the runner is not connected"
               : rv == RUNNER_SEND_QUEUE_FULL  ? "the runner's command queue is full"
                                               : "out of memory");
        free(t);
    }
}

static void remote_hold(void *impl, const char *runner_id, int on)
{
    struct runner_remote *remote = impl;
    struct hold **pp, *h;
    char subject[SUBJECT_LEN];

    for (pp = &remote->holds; (h = *pp) != NULL; pp = &h->next)
        if (strcmp(h->id, runner_id) == 0)
            break;
    if (!on) {
        if (h) {
            *pp = h->next;
            js_link_unserve(remote->link, h->serve);
            free(h);
        }
        return;
    }
    if (h)
        return;
    h = calloc(1, sizeof(*h));
    if (!h)
        return;
    snprintf(h->id, sizeof(h->id), "%s", runner_id);
    h->remote = remote;
    subject_for(runner_id, subject);
    if (js_link_serve(remote->link, subject, RUNNER_GROUP, on_request, h, &h->serve) != 0) {
        log_warn("runner %s: other nodes cannot reach it: NATS unreachable", runner_id);
        free(h);
        return;
    }
    h->next = remote->holds;
    remote->holds = h;
}

/* --- the sender's side --------------------------------------------------------- */

static void sent_finish(struct sent *s, enum runner_outcome outcome, int code, const char *detail)
{
    runner_command_done done = s->done;
    void *arg = s->arg;

    sent_free(s->remote, s);
    done(arg, outcome, code, detail);
}

static void on_answer(void *arg, int no_responders, const uint8_t *data, size_t len)
{
    struct sent *s = arg;
    char detail[257];
    size_t n;
    uint32_t code = 0;

    s->request = 0; /* answered: nothing to cancel */
    if (no_responders) {
        sent_finish(s, RUNNER_NOT_SENT, 0, "the runner is not connected to any node");
        return;
    }
    if (len < ANSWER_HEAD || data[0] > RUNNER_LOST) {
        sent_finish(s, RUNNER_UNANSWERED, 0, "the node holding the runner answered garbage");
        return;
    }
    for (int i = 0; i < 4; i++)
        code |= (uint32_t)data[1 + i] << (8 * i);
    n = len - ANSWER_HEAD < sizeof(detail) - 1 ? len - ANSWER_HEAD : sizeof(detail) - 1;
    memcpy(detail, data + ANSWER_HEAD, n);
    detail[n] = '\0';
    sent_finish(s, (enum runner_outcome)data[0], (int)code, detail);
}

static void on_sent_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct sent *s = arg;

    sent_finish(s, RUNNER_UNANSWERED, 0, "the node holding the runner did not answer in time");
}

static int remote_send(void *impl, const char *runner_id, const uint8_t *bytes, size_t len,
                       runner_command_done done, void *arg, void **handle)
{
    struct runner_remote *remote = impl;
    uint32_t wait_ms = remote->ctx->config.command_timeout_ms + MARGIN_MS;
    struct timeval timeout = {wait_ms / 1000, (wait_ms % 1000) * 1000};
    char subject[SUBJECT_LEN];
    uint8_t *msg = malloc(len + 1);
    struct sent *s = NULL;
    int rv = -1;

    *handle = NULL;
    if (!msg)
        return -1;
    msg[0] = done != NULL;
    memcpy(msg + 1, bytes, len);
    subject_for(runner_id, subject);
    if (!done) {
        /* Nobody waits: a start or stop the Runner should learn of. */
        rv = js_link_respond(remote->link, subject, msg, len + 1);
        free(msg);
        return rv;
    }
    s = calloc(1, sizeof(*s));
    if (s)
        s->timer = evtimer_new(remote->base, on_sent_timeout, s);
    if (!s || !s->timer)
        goto out;
    s->remote = remote;
    s->done = done;
    s->arg = arg;
    if (js_link_request(remote->link, subject, msg, len + 1, on_answer, s, &s->request) != 0)
        goto out;
    event_add(s->timer, &timeout);
    s->next = remote->sent;
    remote->sent = s;
    *handle = s;
    s = NULL;
    rv = 0;
out:
    if (s) {
        if (s->timer)
            event_free(s->timer);
        free(s);
    }
    free(msg);
    return rv;
}

static void remote_abandon(void *impl, void *handle)
{
    if (handle)
        sent_free(impl, handle);
}

const struct runner_remote_ops runner_remote_ops = {
    .send = remote_send,
    .abandon = remote_abandon,
    .hold = remote_hold,
};
