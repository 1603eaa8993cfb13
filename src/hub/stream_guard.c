/* stream_guard: see stream_guard.h. */
#include "hub/stream_guard.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/auth.h"
#include "store/gate.h"
#include "store/store.h"

struct stream_guards {
    struct event_base *base;
    struct store *store;
    struct list_node guards; /* struct stream_guard, the newest first */
    size_t count;
    struct event *poll;       /* persistent, pending while count > 0 */
    struct event *step;       /* zero-delay: the next batch of a recheck pass */
    struct list_node *cursor; /* next guard of the pass; NULL: none */
    int in_pass;
    int again; /* the store moved again during the pass */
    uint64_t generation;
    int have_generation;
    uint64_t passes;
    uint64_t ended_unauthenticated;
    uint64_t ended_not_found;
    uint64_t ended_other;
};

static void guards_on_poll(evutil_socket_t fd, short what, void *arg);
static void guards_on_step(evutil_socket_t fd, short what, void *arg);

struct stream_guards *stream_guards_new(struct event_base *base, struct store *store)
{
    struct stream_guards *guards = calloc(1, sizeof(*guards));

    if (!guards)
        return NULL;
    list_init(&guards->guards);
    guards->base = base;
    guards->store = store;
    guards->poll = event_new(base, -1, EV_PERSIST, guards_on_poll, guards);
    guards->step = evtimer_new(base, guards_on_step, guards);
    if (!guards->poll || !guards->step) {
        stream_guards_free(guards);
        return NULL;
    }
    /* The baseline: a change from now on starts a pass. */
    if (store && store_watches_changes(store) &&
        store_change_generation(store, &guards->generation) == STORE_OK)
        guards->have_generation = 1;
    return guards;
}

void stream_guards_free(struct stream_guards *guards)
{
    if (!guards)
        return;
    if (guards->poll)
        event_free(guards->poll);
    if (guards->step)
        event_free(guards->step);
    free(guards);
}

static void schedule_step(struct stream_guards *guards)
{
    static const struct timeval now = {0, 0};

    /* A timer, not event_active: it runs after the loop has polled for
     * I/O again, so other calls are served between two batches. */
    evtimer_add(guards->step, &now);
}

void stream_guard_add(struct stream_guards *guards, struct stream_guard *guard)
{
    struct timeval every = {STREAM_GUARD_POLL_MS / 1000, (STREAM_GUARD_POLL_MS % 1000) * 1000};

    if (!guards || list_is_linked(&guard->link))
        return;
    list_insert_head(&guards->guards, &guard->link);
    if (guards->count++ == 0)
        evtimer_add(guards->poll, &every);
}

void stream_guard_remove(struct stream_guards *guards, struct stream_guard *guard)
{
    if (!guards || !list_is_linked(&guard->link))
        return;
    if (guards->cursor == &guard->link)
        guards->cursor = list_next(&guards->guards, &guard->link);
    list_remove(&guard->link);
    if (--guards->count == 0) {
        event_del(guards->poll);
        event_del(guards->step);
        guards->cursor = NULL;
        guards->in_pass = 0;
        guards->again = 0;
    }
}

static void start_pass(struct stream_guards *guards)
{
    if (guards->in_pass) {
        guards->again = 1;
        return;
    }
    guards->in_pass = 1;
    guards->cursor = list_first(&guards->guards);
    guards->passes++;
    schedule_step(guards);
}

static void guards_on_poll(evutil_socket_t fd, short what, void *arg)
{
    struct stream_guards *guards = arg;
    uint64_t generation = 0;
    int rv;

    if (!guards->store || !store_watches_changes(guards->store))
        return;
    rv = store_change_generation(guards->store, &generation);
    if (rv != STORE_OK) {
        /* Fail closed: the rechecks read the store themselves and end
         * their streams UNAVAILABLE while it cannot answer. */
        start_pass(guards);
        return;
    }
    if (guards->have_generation && generation == guards->generation)
        return;
    guards->generation = generation;
    guards->have_generation = 1;
    log_debug("the ownership store changed; re-checking %zu open stream(s)", guards->count);
    start_pass(guards);
}

void stream_guards_recheck(struct stream_guards *guards)
{
    if (!guards || guards->count == 0)
        return;
    log_debug("this server changed the ownership store; re-checking %zu open stream(s)",
              guards->count);
    start_pass(guards);
}

static void guards_on_step(evutil_socket_t fd, short what, void *arg)
{
    struct stream_guards *guards = arg;
    int n;

    for (n = 0; n < STREAM_GUARD_BATCH && guards->cursor; n++) {
        struct stream_guard *guard = list_entry(guards->cursor, struct stream_guard, link);
        guards->cursor = list_next(&guards->guards, guards->cursor);
        guard->recheck(guard); /* may unlink any guard: remove keeps cursor valid */
    }
    if (guards->cursor) {
        schedule_step(guards);
        return;
    }
    guards->in_pass = 0;
    if (guards->again) {
        guards->again = 0;
        start_pass(guards);
    }
}

void stream_guard_end(struct stream_guards *guards, struct hub_stream stream,
                      enum grpc_status status, const char *message)
{
    if (guards) {
        if (status == GRPC_STATUS_UNAUTHENTICATED)
            guards->ended_unauthenticated++;
        else if (status == GRPC_STATUS_NOT_FOUND)
            guards->ended_not_found++;
        else
            guards->ended_other++;
    }
    stream.ops->finish(stream.call, status, message);
}

int stream_guard_reauthenticate(struct stream_guards *guards, struct hub_stream stream,
                                struct store_subject *subject)
{
    const char *header = stream.ops->metadata(stream.call, "authorization");
    enum auth_door door = stream.ops->door(stream.call);
    struct store_subject fresh;
    int rv;

    if (!guards || !guards->store) {
        stream_guard_end(guards, stream, GRPC_STATUS_UNAUTHENTICATED, AUTH_UNAUTHENTICATED_MESSAGE);
        return -1;
    }
    rv = auth_authenticate(guards->store, door, header, header ? strlen(header) : 0, &fresh);
    if (rv == AUTH_FAULT) {
        stream_guard_end(guards, stream, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return -1;
    }
    /* A token is bound to one subject for good, so a different answer can
     * only mean the token no longer stands for the caller. */
    if (rv != AUTH_OK || fresh.kind != subject->kind || strcmp(fresh.id, subject->id) != 0) {
        stream_guard_end(guards, stream, GRPC_STATUS_UNAUTHENTICATED, AUTH_UNAUTHENTICATED_MESSAGE);
        return -1;
    }
    *subject = fresh; /* is_admin may have changed */
    return 0;
}

void stream_guards_write_metrics(const struct stream_guards *guards, FILE *out)
{
    if (!guards)
        return;
    fprintf(out,
            "# HELP agenthub_streams_guarded Open streams re-checked when the ownership store "
            "changes.\n"
            "# TYPE agenthub_streams_guarded gauge\n"
            "agenthub_streams_guarded %zu\n"
            "# HELP agenthub_stream_recheck_passes_total Times the open streams were re-checked.\n"
            "# TYPE agenthub_stream_recheck_passes_total counter\n"
            "agenthub_stream_recheck_passes_total %llu\n"
            "# HELP agenthub_streams_revoked_total Open streams ended by a re-check, by status.\n"
            "# TYPE agenthub_streams_revoked_total counter\n"
            "agenthub_streams_revoked_total{status=\"UNAUTHENTICATED\"} %llu\n"
            "agenthub_streams_revoked_total{status=\"NOT_FOUND\"} %llu\n"
            "agenthub_streams_revoked_total{status=\"other\"} %llu\n",
            guards->count, (unsigned long long)guards->passes,
            (unsigned long long)guards->ended_unauthenticated,
            (unsigned long long)guards->ended_not_found, (unsigned long long)guards->ended_other);
}
