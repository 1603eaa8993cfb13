/* runner_control: Sessions control streams and the commands they carry. */
#include "hub/runner_control.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/container_of.h"
#include "common/list.h"
#include "common/log.h"
#include "core/arbiter.h"
#include "hub/hub.h"
#include "hub/runner_seq.h"
#include "hub/stream_guard.h"
#include "store/gate.h"
#include "store/store.h"

/* Charged per queued command on top of its encoding (its bookkeeping and
 * timer), so a flood of empty commands is bounded too. */
#define COMMAND_OVERHEAD 256
/* Written commands a Runner may leave unanswered at once.  Answered-for
 * ones (late answers still expected) are forgotten first to make room;
 * when every slot has a waiter, the queue waits for answers. */
#define INFLIGHT_MAX 256

struct runner_link;

struct runner_command {
    uint64_t id;
    struct runner_link *link;
    runner_command_done done; /* NULL: nobody waits (any more) */
    void *arg;
    struct event *timer; /* with a waiter only */
    uint8_t *bytes;      /* the encoded SessionsResponse until written */
    size_t len;
    size_t charge;
    void *remote; /* sent to another node (no link): runner_remote_ops's handle */
    unsigned written : 1;
    unsigned answered : 1;    /* its waiter was told before the Runner answered */
    struct list_node in_list; /* on its link's queue or inflight list */
};

/* A list of commands, oldest first. */
struct command_list {
    struct list_node commands;
    size_t count;
};

struct runner_link {
    char id[STORE_ID_MAX];
    struct hub_stream stream; /* the Sessions call */
    struct hub *ctx;
    struct store_subject subject;
    struct stream_guard guard;
    struct command_list queue;    /* not yet written, oldest first */
    struct command_list inflight; /* written, unanswered, oldest first */
    size_t queued_bytes;
    unsigned heard : 1;             /* its first message arrived */
    struct list_node registry_link; /* on the registry's links */
};

struct runner_registry {
    struct event_base *base;
    struct list_node links; /* struct runner_link, the newest first */
    struct runner_runs *runs;
    uint64_t next_id;
    size_t queued_bytes; /* over every Runner */
    size_t queued;
    uint64_t queue_full; /* refused at once */
    uint64_t withdrawn;  /* never written: timed out, abandoned, stream gone */
    uint64_t unanswered; /* written, the waiter told "may have been delivered" */
    uint64_t late;       /* answers after the waiter was told */
    uint64_t unknown;    /* answers matching no remembered command */
    uint64_t reports_too_big;
    const struct runner_remote_ops *remote;
    void *remote_impl;
};

struct runner_registry *runner_registry_new(struct event_base *base)
{
    struct runner_registry *runners = calloc(1, sizeof(*runners));

    if (!runners)
        return NULL;
    list_init(&runners->links);
    runners->base = base;
    runners->runs = runner_runs_new();
    if (!runners->runs) {
        free(runners);
        return NULL;
    }
    return runners;
}

void runner_registry_set_remote(struct runner_registry *runners,
                                const struct runner_remote_ops *ops, void *impl)
{
    runners->remote = ops;
    runners->remote_impl = impl;
}

struct runner_runs *runner_registry_runs(const struct runner_registry *runners)
{
    return runners->runs;
}

/* --- Command lists --------------------------------------------------------- */

static void command_list_init(struct command_list *list)
{
    list_init(&list->commands);
    list->count = 0;
}

/* The oldest command of LIST, or NULL. */
static struct runner_command *command_list_first(const struct command_list *list)
{
    struct list_node *node = list_first(&list->commands);

    return node ? list_entry(node, struct runner_command, in_list) : NULL;
}

/* The command after C on LIST, or NULL. */
static struct runner_command *command_list_next(const struct command_list *list,
                                                const struct runner_command *c)
{
    struct list_node *node = list_next(&list->commands, &c->in_list);

    return node ? list_entry(node, struct runner_command, in_list) : NULL;
}

static void command_list_push(struct command_list *list, struct runner_command *c)
{
    list_insert_tail(&list->commands, &c->in_list);
    list->count++;
}

static void command_list_unlink(struct command_list *list, struct runner_command *c)
{
    list_remove(&c->in_list);
    list->count--;
}

/* Unlinks and returns the oldest command of LIST, or NULL. */
static struct runner_command *command_list_pop(struct command_list *list)
{
    struct runner_command *c = command_list_first(list);

    if (c)
        command_list_unlink(list, c);
    return c;
}

static struct runner_registry *link_registry(const struct runner_link *link)
{
    return link->ctx->runners;
}

/* Unlinks C from whichever list holds it and frees it. */
static void command_free(struct runner_command *c)
{
    struct runner_link *link = c->link;

    if (c->written) {
        command_list_unlink(&link->inflight, c);
    } else {
        command_list_unlink(&link->queue, c);
        link->queued_bytes -= c->charge;
        link_registry(link)->queued_bytes -= c->charge;
        link_registry(link)->queued--;
    }
    if (c->timer)
        event_free(c->timer);
    free(c->bytes);
    free(c);
}

/* Tells C's waiter OUTCOME.  A written command told it "may have been
 * delivered" stays remembered (answered) so a late answer is recognised;
 * every other command is freed first. */
static void command_complete(struct runner_command *c, enum runner_outcome outcome, int code,
                             const char *detail)
{
    runner_command_done done = c->done;
    void *arg = c->arg;

    c->done = NULL;
    if (c->timer)
        event_del(c->timer);
    if (c->written && outcome == RUNNER_UNANSWERED)
        c->answered = 1;
    else
        command_free(c);
    if (done)
        done(arg, outcome, code, detail);
}

/* Ends every command of LINK: queued ones were never sent, written ones
 * with a waiter are lost, the rest are forgotten. */
static void link_fail_commands(struct runner_link *link, const char *why)
{
    struct runner_registry *runners = link_registry(link);
    struct runner_command *c;

    while ((c = command_list_pop(&link->queue)) != NULL) {
        runner_command_done done = c->done;
        void *arg = c->arg;
        link->queued_bytes -= c->charge;
        runners->queued_bytes -= c->charge;
        runners->queued--;
        if (c->timer)
            event_free(c->timer);
        free(c->bytes);
        free(c);
        if (done) {
            runners->withdrawn++;
            done(arg, RUNNER_NOT_SENT, 0, why);
        }
    }
    while ((c = command_list_pop(&link->inflight)) != NULL) {
        runner_command_done done = c->answered ? NULL : c->done;
        void *arg = c->arg;
        if (c->timer)
            event_free(c->timer);
        free(c->bytes);
        free(c);
        if (done)
            done(arg, RUNNER_LOST, 0, why);
    }
}

void runner_registry_free(struct runner_registry *runners)
{
    struct list_node *node, *next;

    if (!runners)
        return;
    list_for_each_safe (node, next, &runners->links) {
        struct runner_link *link = list_entry(node, struct runner_link, registry_link);
        list_remove(&link->registry_link);
        link_fail_commands(link, "the server is stopping");
        free(link);
    }
    runner_runs_free(runners->runs);
    free(runners);
}

static struct runner_link *link_find(const struct runner_registry *runners, const char *runner_id)
{
    const struct list_node *node;

    list_for_each (node, &runners->links) {
        struct runner_link *link = list_entry(node, struct runner_link, registry_link);
        if (strcmp(link->id, runner_id) == 0)
            return link;
    }
    return NULL;
}

int runner_connected(const struct runner_registry *runners, const char *runner_id)
{
    return link_find(runners, runner_id) != NULL;
}

/* --- Sending ------------------------------------------------------------- */

static void on_command_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct runner_command *c = arg;
    struct runner_link *link = c->link;
    struct runner_registry *runners = link_registry(link);

    if (!c->written) {
        runners->withdrawn++;
        command_complete(c, RUNNER_NOT_SENT, 0, "the runner did not take it in time");
        return;
    }
    runners->unanswered++;
    log_warn("runner %s: request %" PRIu64 " was sent but not answered in time", link->id, c->id);
    command_complete(c, RUNNER_UNANSWERED, 0, "the runner did not answer in time");
    /* Its in-flight slot may now be reused. */
    if (link->queue.count)
        link->stream.ops->want_writable(link->stream.call);
}

/* The session COMMAND is for ("" for a status of every session). */
static const char *command_session(const Compass__V1__SessionsResponse *command)
{
    switch (command->command_case) {
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_START:
        return command->session_id;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STOP:
        return command->stop->session_id;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STATUS:
        return command->status->session_id;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_DELIVER_CONTROL:
        return command->deliver_control->session_id;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_START_NOW:
        return command->start_now->session_id;
    default:
        return "";
    }
}

/* Encodes MESSAGE as command ID: its request_id (and a deliver_control's
 * control_seq, so an agent's ControlAck names the command it acknowledges)
 * is ID.  MESSAGE's request_id is left as it was.  Returns the bytes
 * (malloc'd) with *LEN, or NULL when memory is short. */
static uint8_t *command_encode(Compass__V1__SessionsResponse *message, uint64_t id, size_t *len)
{
    char request_id[24];
    char *previous = message->request_id;
    uint8_t *bytes;

    snprintf(request_id, sizeof(request_id), "%" PRIu64, id);
    message->request_id = request_id;
    if (message->command_case == COMPASS__V1__SESSIONS_RESPONSE__COMMAND_DELIVER_CONTROL &&
        message->deliver_control->op)
        message->deliver_control->op->control_seq = id;
    *len = protobuf_c_message_get_packed_size(&message->base);
    bytes = malloc(*len ? *len : 1);
    if (bytes)
        protobuf_c_message_pack(&message->base, bytes);
    message->request_id = previous;
    return bytes;
}

/* The outcome of a command sent to another node. */
static void remote_done(void *arg, enum runner_outcome outcome, int code, const char *detail)
{
    struct runner_command *c = arg;
    runner_command_done done = c->done;
    void *done_arg = c->arg;

    free(c);
    done(done_arg, outcome, code, detail);
}

/* Sends MESSAGE to the node holding RUNNER_ID (see runner_command_send). */
static enum runner_send_rc send_remote(struct runner_registry *runners, const char *runner_id,
                                       Compass__V1__SessionsResponse *message,
                                       runner_command_done done, void *arg,
                                       struct runner_command **handle)
{
    struct runner_command *c = calloc(1, sizeof(*c));
    uint8_t *bytes;
    size_t len;
    int rv;

    bytes = c ? command_encode(message, runners->next_id + 1, &len) : NULL;
    if (!bytes) {
        free(c);
        return RUNNER_SEND_NOMEM;
    }
    c->id = ++runners->next_id;
    c->done = done;
    c->arg = arg;
    rv = runners->remote->send(runners->remote_impl, runner_id, bytes, len,
                               done ? remote_done : NULL, c, &c->remote);
    free(bytes);
    if (rv != 0 || !done) {
        free(c);
        return rv != 0 ? RUNNER_SEND_NOT_CONNECTED : RUNNER_SEND_QUEUED;
    }
    if (handle)
        *handle = c;
    return RUNNER_SEND_QUEUED;
}

enum runner_send_rc runner_command_send(struct hub *ctx, const char *runner_id,
                                        Compass__V1__SessionsResponse *message,
                                        runner_command_done done, void *arg,
                                        struct runner_command **handle)
{
    struct runner_registry *runners = ctx->runners;
    struct runner_link *link = link_find(runners, runner_id);
    struct runner_command *c;
    uint8_t *bytes;
    size_t len, charge;

    if (handle)
        *handle = NULL;
    if (!link && runners->remote)
        return send_remote(runners, runner_id, message, done, arg, handle);
    if (!link)
        return RUNNER_SEND_NOT_CONNECTED;
    bytes = command_encode(message, runners->next_id + 1, &len);
    if (!bytes)
        return RUNNER_SEND_NOMEM;
    charge = len + COMMAND_OVERHEAD;
    /* One command alone always fits, so the largest message a caller may
     * send can still reach a Runner that keeps up. */
    if (link->queue.count > 0 && link->queued_bytes + charge > ctx->config.runner_queue_bytes) {
        free(bytes);
        runners->queue_full++;
        if (!done) /* nobody waits to hear it: say so here */
            log_warn("runner %s: its command queue is full; a command for session %.128s was "
                     "dropped",
                     link->id, command_session(message));
        return RUNNER_SEND_QUEUE_FULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        free(bytes);
        return RUNNER_SEND_NOMEM;
    }
    c->bytes = bytes;
    c->timer = done ? evtimer_new(runners->base, on_command_timeout, c) : NULL;
    if (done && !c->timer) {
        free(c->bytes);
        free(c);
        return RUNNER_SEND_NOMEM;
    }
    c->id = ++runners->next_id;
    c->link = link;
    c->done = done;
    c->arg = arg;
    c->len = len;
    c->charge = charge;
    command_list_push(&link->queue, c);
    link->queued_bytes += charge;
    runners->queued_bytes += charge;
    runners->queued++;
    if (c->timer) {
        struct timeval timeout = {ctx->config.command_timeout_ms / 1000,
                                  (ctx->config.command_timeout_ms % 1000) * 1000};
        event_add(c->timer, &timeout);
    }
    link->stream.ops->want_writable(link->stream.call);
    if (handle)
        *handle = c;
    return RUNNER_SEND_QUEUED;
}

void runner_command_abandon(struct hub *ctx, struct runner_command *c)
{
    if (!c)
        return;
    if (c->remote) {
        ctx->runners->remote->abandon(ctx->runners->remote_impl, c->remote);
        free(c);
        return;
    }
    c->done = NULL;
    if (c->timer)
        event_del(c->timer);
    if (!c->written) {
        ctx->runners->withdrawn++;
        command_free(c);
        return;
    }
    c->answered = 1;
    if (c->link->queue.count)
        c->link->stream.ops->want_writable(c->link->stream.call);
}

/* Writes LINK's oldest queued command if the Runner may take one more.
 * Called when the stream's send queue is empty and HTTP/2 wants bytes. */
void runner_link_write_next(struct runner_link *link)
{
    struct runner_command *c = command_list_first(&link->queue);

    if (!c)
        return;
    if (link->inflight.count >= INFLIGHT_MAX) {
        struct runner_command *old = command_list_first(&link->inflight);
        while (old && old->done)
            old = command_list_next(&link->inflight, old);
        if (!old)
            return; /* every slot has a waiter: an answer or a timeout frees one */
        command_free(old);
    }
    if (link->stream.ops->send(link->stream.call, c->bytes, c->len) != 0) {
        if (c->done)
            link_registry(link)->withdrawn++;
        command_complete(c, RUNNER_NOT_SENT, 0, "the runner's control stream cannot take it");
        return;
    }
    command_list_unlink(&link->queue, c);
    link->queued_bytes -= c->charge;
    link_registry(link)->queued_bytes -= c->charge;
    link_registry(link)->queued--;
    free(c->bytes);
    c->bytes = NULL;
    c->written = 1;
    command_list_push(&link->inflight, c);
}

/* --- Control streams ------------------------------------------------------ */

static void link_unlink(struct runner_registry *runners, struct runner_link *link)
{
    list_remove(&link->registry_link);
}

/* LINK's stream is over: its commands end, and every session its Runner
 * hosts is announced unreachable (except those whose agent already
 * stopped: "stopped" stays their last word).  Frees LINK. */
void runner_link_close(struct hub *ctx, struct runner_link *link, const char *why)
{
    link->stream.ops->set_user(link->stream.call, NULL);
    stream_guard_remove(ctx->guards, &link->guard);
    link_fail_commands(link, why);
    link_unlink(ctx->runners, link);
    if (ctx->runners->remote)
        ctx->runners->remote->hold(ctx->runners->remote_impl, link->id, 0);
    for (struct session *s = session_first(ctx->sessions); s; s = session_next(s)) {
        const char *binding = session_binding(s);
        enum arbiter_state state = arbiter_state(session_arbiter(s));
        if (binding && strcmp(binding, link->id) == 0 && state != ARBITER_STOPPED &&
            state != ARBITER_ERRORED)
            hub_announce_state(ctx, s, ARBITER_DISCONNECTED);
    }
    free(link);
}

/* The token of an open control stream was revoked (or the store cannot
 * say): it ends as a fresh call would be refused. */
static void sessions_recheck(struct stream_guard *guard)
{
    struct runner_link *link = container_of(guard, struct runner_link, guard);
    struct hub *ctx = link->ctx;

    if (stream_guard_reauthenticate(ctx->guards, link->stream, &link->subject) == 0)
        return;
    log_info("runner %s: its Sessions stream is no longer authorized; ended", link->id);
    runner_link_close(ctx, link, "the runner's control stream was ended");
}

struct runner_link *runner_link_open(struct hub *ctx, struct hub_stream stream,
                                     const struct store_subject *subject)
{
    struct runner_link *link = calloc(1, sizeof(*link));
    struct runner_link *old;

    if (!link)
        return NULL;
    old = link_find(ctx->runners, subject->id);
    snprintf(link->id, sizeof(link->id), "%s", subject->id);
    link->stream = stream;
    link->ctx = ctx;
    link->subject = *subject;
    link->guard.recheck = sessions_recheck;
    command_list_init(&link->queue);
    command_list_init(&link->inflight);
    list_insert_head(&ctx->runners->links, &link->registry_link);
    if (old) {
        /* One control stream per Runner: the newest wins. */
        log_info("runner %s opened a second Sessions stream; closing the first", subject->id);
        old->stream.ops->set_user(old->stream.call, NULL);
        stream_guard_remove(ctx->guards, &old->guard);
        link_fail_commands(old, "the runner's control stream was replaced");
        link_unlink(ctx->runners, old);
        old->stream.ops->finish(old->stream.call, GRPC_STATUS_ABORTED,
                                "replaced by a newer Sessions stream from the same runner");
        free(old);
    } else if (ctx->runners->remote) {
        ctx->runners->remote->hold(ctx->runners->remote_impl, link->id, 1);
    }
    stream.ops->set_user(stream.call, link);
    stream_guard_add(ctx->guards, &link->guard);
    return link;
}

const char *runner_link_id(const struct runner_link *link)
{
    return link->id;
}

static int id_compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A report being checked against the store's sessions of its Runner. */
struct report_check {
    char **ids; /* the reported ids, sorted */
    size_t n;
    uint8_t *found; /* per id: 0 not this Runner's, 1 open, 2 closed */
};

static int report_row(const struct store_session *row, void *arg)
{
    struct report_check *check = arg;
    const char *key = row->session_id;
    char **hit = bsearch(&key, check->ids, check->n, sizeof(*check->ids), id_compare);

    if (hit)
        check->found[hit - check->ids] = row->closed ? 2 : 1;
    return 0;
}

/* The Runner's report of the sessions it hosts (IDS, N of them): each one
 * bound to it is live again, and its subscribers hear its current state.
 * One store read answers the whole report.  Returns 0, or -1 after ending
 * the stream (a report over --max-report-sessions; LINK is freed). */
static int sessions_report(struct hub *ctx, struct runner_link *link, char *const *ids, size_t n)
{
    struct report_check check = {NULL, n, NULL};
    char message[160];
    int rv;

    if (n > ctx->config.max_report_sessions) {
        ctx->runners->reports_too_big++;
        log_warn("runner %s reported %zu live sessions; at most %u are accepted", link->id, n,
                 ctx->config.max_report_sessions);
        snprintf(message, sizeof(message),
                 "the live-sessions report lists %zu sessions; at most %u are accepted", n,
                 ctx->config.max_report_sessions);
        link->stream.ops->finish(link->stream.call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
        runner_link_close(ctx, link, "the runner's control stream was ended");
        return -1;
    }
    if (check.n == 0)
        return 0;
    check.ids = malloc(check.n * sizeof(*check.ids));
    check.found = calloc(check.n, 1);
    if (!check.ids || !check.found) {
        log_warn("runner %s: out of memory checking its live-sessions report", link->id);
        goto out;
    }
    memcpy(check.ids, ids, check.n * sizeof(*check.ids));
    qsort(check.ids, check.n, sizeof(*check.ids), id_compare);
    rv = store_runner_sessions(ctx->store, link->id, report_row, &check);
    if (rv != STORE_OK) {
        log_warn("runner %s: cannot check its live-sessions report now (%s)", link->id,
                 store_rc_name(rv));
        goto out;
    }
    for (size_t i = 0; i < check.n; i++) {
        const char *sid = check.ids[i];
        struct session *s;
        if (!check.found[i])
            continue; /* not this Runner's: never adopt it */
        s = session_find(ctx->sessions, sid, strlen(sid));
        if (!s && check.found[i] == 2)
            continue; /* ended: never reopened by a report */
        if (!s && !(s = hub_session(ctx, sid)))
            continue;
        session_bind(s, link->id);
        hub_announce_derived(ctx, s);
    }
out:
    free(check.ids);
    free(check.found);
    return 0;
}

/* A status result is the same report, one AgentSessionStatus per session
 * (its state is the Runner's view; the server derives its own).  Returns
 * as sessions_report. */
static int sessions_report_statuses(struct hub *ctx, struct runner_link *link,
                                    const Compass__V1__GetAgentStatusResponse *status)
{
    char **ids;
    int rv;

    if (status->n_statuses == 0 || status->n_statuses > ctx->config.max_report_sessions)
        return sessions_report(ctx, link, NULL, status->n_statuses);
    ids = malloc(status->n_statuses * sizeof(*ids));
    if (!ids) {
        log_warn("runner %s: out of memory reading its status report", link->id);
        return 0;
    }
    for (size_t i = 0; i < status->n_statuses; i++)
        ids[i] = status->statuses[i]->session_id;
    rv = sessions_report(ctx, link, ids, status->n_statuses);
    free(ids);
    return rv;
}

/* The name of RunnerErrorCode CODE, for logs. */
static const char *runner_error_name(int code)
{
    const ProtobufCEnumValue *value =
        protobuf_c_enum_descriptor_get_value(&compass__v1__runner_error_code__descriptor, code);

    return value ? value->name : "an unknown RunnerErrorCode";
}

/* The Runner answered request ANSWER->request_id: a RunnerError refuses the
 * command, any other result (or none) says it was carried out; a status
 * result is also a report of the Runner's sessions.  Returns 0, or -1 when
 * that report ended the stream (LINK is freed). */
static int link_answer(struct hub *ctx, struct runner_link *link,
                       const Compass__V1__SessionsRequest *answer)
{
    struct runner_registry *runners = link_registry(link);
    int refused = answer->result_case == COMPASS__V1__SESSIONS_REQUEST__RESULT_ERROR;
    int code = refused ? (int)answer->error->code : 0;
    const char *detail = refused ? answer->error->message : "";
    char *end;
    uint64_t id = strtoull(answer->request_id, &end, 10);

    for (struct runner_command *c = command_list_first(&link->inflight); c && *end == '\0';
         c = command_list_next(&link->inflight, c)) {
        if (c->id != id)
            continue;
        if (c->answered) {
            runners->late++;
            log_warn("runner %s answered request %" PRIu64 " (%s) after its caller was told it "
                     "may not have been delivered",
                     link->id, id, refused ? "refused" : "carried out");
            command_free(c);
        } else if (c->done) {
            command_complete(c, refused ? RUNNER_REFUSED : RUNNER_ACKED, code, detail);
        } else {
            if (refused)
                log_info("runner %s refused request %" PRIu64 " (%s): %.200s", link->id, id,
                         runner_error_name(code), detail);
            command_free(c);
        }
        if (link->queue.count)
            link->stream.ops->want_writable(link->stream.call);
        if (answer->result_case == COMPASS__V1__SESSIONS_REQUEST__RESULT_STATUS)
            return sessions_report_statuses(ctx, link, answer->status);
        return 0;
    }
    runners->unknown++;
    log_debug("runner %s answered unknown request %.40s", link->id, answer->request_id);
    return 0;
}

/* Asks LINK's Runner for every session it hosts: its status result is its
 * report. */
static void link_ask_status(struct hub *ctx, struct runner_link *link)
{
    Compass__V1__SessionsResponse command = COMPASS__V1__SESSIONS_RESPONSE__INIT;
    Compass__V1__GetAgentStatusRequest status = COMPASS__V1__GET_AGENT_STATUS_REQUEST__INIT;

    command.command_case = COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STATUS;
    command.status = &status;
    runner_command_send(ctx, link->id, &command, NULL, NULL, NULL);
}

void runner_link_message(struct hub *ctx, struct runner_link *link,
                         const Compass__V1__SessionsRequest *request)
{
    int first = !link->heard;

    link->heard = 1;
    if (request->request_id[0] != '\0') {
        link_answer(ctx, link, request);
    } else if (request->result_case == COMPASS__V1__SESSIONS_REQUEST__RESULT_STATUS) {
        sessions_report_statuses(ctx, link, request->status);
    } else if (request->n_live_sessions > 0 ||
               request->result_case != COMPASS__V1__SESSIONS_REQUEST__RESULT__NOT_SET) {
        sessions_report(ctx, link, request->live_sessions, request->n_live_sessions);
    } else if (first) {
        /* An opening message that says nothing of its sessions: ask. */
        link_ask_status(ctx, link);
    }
}

void runner_registry_write_metrics(const struct runner_registry *r, FILE *out)
{
    fprintf(out,
            "# HELP agenthub_runner_commands_queued Control commands waiting to be written.\n"
            "# TYPE agenthub_runner_commands_queued gauge\n"
            "agenthub_runner_commands_queued %zu\n"
            "# TYPE agenthub_runner_command_queue_bytes gauge\n"
            "agenthub_runner_command_queue_bytes %zu\n"
            "# HELP agenthub_runner_commands_total Control commands that did not simply "
            "succeed, by what the caller was told.\n"
            "# TYPE agenthub_runner_commands_total counter\n"
            "agenthub_runner_commands_total{outcome=\"queue_full\"} %llu\n"
            "agenthub_runner_commands_total{outcome=\"withdrawn\"} %llu\n"
            "agenthub_runner_commands_total{outcome=\"unanswered\"} %llu\n"
            "# HELP agenthub_runner_late_answers_total Runner answers that came after the "
            "caller was told the command may not have been delivered.\n"
            "# TYPE agenthub_runner_late_answers_total counter\n"
            "agenthub_runner_late_answers_total %llu\n"
            "# TYPE agenthub_runner_unknown_answers_total counter\n"
            "agenthub_runner_unknown_answers_total %llu\n"
            "# HELP agenthub_runner_reports_refused_total Live-sessions reports over "
            "--max-report-sessions.\n"
            "# TYPE agenthub_runner_reports_refused_total counter\n"
            "agenthub_runner_reports_refused_total %llu\n",
            r->queued, r->queued_bytes, (unsigned long long)r->queue_full,
            (unsigned long long)r->withdrawn, (unsigned long long)r->unanswered,
            (unsigned long long)r->late, (unsigned long long)r->unknown,
            (unsigned long long)r->reports_too_big);
    runner_runs_write_metrics(r->runs, out);
}
