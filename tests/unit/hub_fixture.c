/* hub_fixture: see hub_fixture.h. */
#include "hub_fixture.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub_log.h"
#include "hub/runner_control.h"
#include "hub/stream_guard.h"

static void fake_finish(void *call, enum grpc_status status, const char *message)
{
    struct fake_call *c = call;

    if (c->finished)
        return;
    c->finished = 1;
    c->status = status;
    snprintf(c->message, sizeof(c->message), "%s", message ? message : "");
}

static int fake_send(void *call, const uint8_t *bytes, size_t len)
{
    struct fake_call *c = call;

    if (c->finished || c->refuse_send)
        return -1;
    if (c->sent < FAKE_CALL_SENT_MAX) {
        c->sent_bytes[c->sent] = malloc(len ? len : 1);
        if (!c->sent_bytes[c->sent])
            abort();
        memcpy(c->sent_bytes[c->sent], bytes, len);
        c->sent_len[c->sent] = len;
    }
    c->sent++;
    return 0;
}

static void fake_want_writable(void *call)
{
    ((struct fake_call *)call)->writable_asked++;
}

static void fake_set_user(void *call, void *user)
{
    ((struct fake_call *)call)->user = user;
}

static const char *fake_metadata(void *call, const char *name)
{
    struct fake_call *c = call;

    if (strcmp(name, "authorization") == 0 && c->authorization[0])
        return c->authorization;
    return NULL;
}

static enum auth_door fake_door(void *call)
{
    return ((struct fake_call *)call)->door;
}

static int fake_finished(void *call)
{
    return ((struct fake_call *)call)->finished;
}

const struct hub_stream_ops fake_stream_ops = {
    .finish = fake_finish,
    .send = fake_send,
    .want_writable = fake_want_writable,
    .set_user = fake_set_user,
    .metadata = fake_metadata,
    .door = fake_door,
    .finished = fake_finished,
};

void fake_call_init(struct fake_call *c, const char *token)
{
    memset(c, 0, sizeof(*c));
    c->door = AUTH_DOOR_RUNNER;
    if (token)
        snprintf(c->authorization, sizeof(c->authorization), "Bearer %s", token);
}

struct hub_stream fake_stream(struct fake_call *c)
{
    return (struct hub_stream){&fake_stream_ops, c};
}

void fake_call_free(struct fake_call *c)
{
    for (int i = 0; i < c->sent && i < FAKE_CALL_SENT_MAX; i++)
        free(c->sent_bytes[i]);
    c->sent = 0;
}

void hub_fixture_open(struct hub_fixture *h)
{
    memset(h, 0, sizeof(*h));
    store_fixture_open(&h->fx);
    store_fixture_world(&h->fx);
    session_registry_init(&h->sessions, 0);
    bus_init(&h->bus, 1 << 20, 1);
    h->base = event_base_new();
    if (!h->base)
        abort();
    h->hub.store = h->fx.s;
    h->hub.sessions = &h->sessions;
    h->hub.bus = &h->bus;
    hub_log_memory(&h->hub.log, &h->bus);
    h->hub.config.command_timeout_ms = 100;
    h->hub.config.runner_queue_bytes = 64 * 1024;
    h->hub.config.max_report_sessions = 16;
    h->hub.runners = runner_registry_new(h->base);
    h->hub.guards = stream_guards_new(h->base, h->fx.s);
    if (!h->hub.runners || !h->hub.guards)
        abort();
}

void hub_fixture_close(struct hub_fixture *h)
{
    stream_guards_free(h->hub.guards);
    runner_registry_free(h->hub.runners);
    event_base_free(h->base);
    session_registry_free(&h->sessions);
    bus_free(&h->bus);
    store_fixture_close(&h->fx);
}

void hub_fixture_run(struct hub_fixture *h, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    event_base_loopexit(h->base, &tv);
    event_base_dispatch(h->base);
}

long long hub_fixture_metric(struct hub_fixture *h, const char *name)
{
    char *text = NULL, *line;
    size_t len = 0, n = strlen(name);
    long long value = -1;
    FILE *out = open_memstream(&text, &len);

    if (!out)
        abort();
    hub_write_counters(&h->hub, out);
    hub_write_metrics(&h->hub, out);
    fclose(out);
    for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, name, n) == 0 && line[n] == ' ') {
            value = strtoll(line + n + 1, NULL, 10);
            break;
        }
    }
    free(text);
    return value;
}

struct store_subject hub_fixture_runner(const char *id)
{
    struct store_subject s;

    memset(&s, 0, sizeof(s));
    s.kind = STORE_SUBJECT_RUNNER;
    snprintf(s.id, sizeof(s.id), "%s", id);
    return s;
}

uint64_t hub_fixture_newest(struct hub_fixture *h, const char *session_id)
{
    struct session *s = session_find(&h->sessions, session_id, strlen(session_id));
    struct hub_log_span span;

    if (!s)
        return 0;
    hub_log_span(&h->hub.log, s, &span);
    return span.newest;
}
