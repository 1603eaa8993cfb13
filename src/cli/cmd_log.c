/* agenthub log and events: a session's pane and the event bus, streamed. */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/log_stream.h"
#include "cli/render.h"
#include "grpc/grpc_wire.h"

#define TAIL_ALL 0x80000000u

struct pane_round {
    struct log_stream *stream;
    struct grpc_client_call *call;
    size_t delivered;
    int reached; /* the live edge was reached: the call was cancelled */
    int done;
    struct grpc_client_result result;
};

static void pane_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct pane_round *round = arg;
    struct log_stream *stream = round->stream;
    Compass__V1__AgentSessionFrame *frame;

    if (round->reached)
        return;
    frame = compass__v1__agent_session_frame__unpack(NULL, len, data);
    if (!frame)
        return;
    if (frame->seq > stream->last_seq) {
        stream->last_seq = frame->seq;
        round->delivered++;
        if (stream->emit(stream->arg, frame) != 0)
            stream->stopped = 1;
    }
    protobuf_c_message_free_unpacked(&frame->base, NULL);
    if (stream->stopped || (!stream->follow && stream->last_seq >= stream->edge_seq)) {
        round->reached = 1;
        grpc_client_call_cancel(round->call);
    }
}

static void pane_on_done(void *arg, const struct grpc_client_result *result)
{
    struct pane_round *round = arg;

    round->result = *result;
    round->done = 1;
}

/* Runs one subscription until it ends.  Returns 0, or -1 when the call could
 * not start (ROUND's result says why). */
static int pane_round_run(struct log_stream *stream, uint64_t since, uint32_t tail,
                          struct pane_round *round)
{
    static const struct grpc_client_call_handler handler = {pane_on_message, pane_on_done};
    Compass__V1__SubscribeAgentSessionRequest request =
        COMPASS__V1__SUBSCRIBE_AGENT_SESSION_REQUEST__INIT;
    struct cli_env *env = stream->env;

    memset(round, 0, sizeof(*round));
    round->stream = stream;
    request.session_id = (char *)stream->session_id;
    request.since_seq = since;
    request.tail = since ? 0 : tail;
    request.agenthub_events = 1; /* records and batch windows are shown too */
    round->call =
        grpc_client_call_start(env->client, "/compass.v1.CompassService/SubscribeAgentSession",
                               env->token, 0, &handler, round);
    if (!round->call) {
        round->result.status = GRPC_STATUS_UNAVAILABLE;
        snprintf(round->result.message, sizeof(round->result.message), "connection unavailable");
        return -1;
    }
    grpc_client_call_send(round->call, &request.base);
    grpc_client_call_close_send(round->call);
    while (!round->done)
        if (event_base_loop(env->base, EVLOOP_ONCE) != 0)
            break;
    return 0;
}

/* Consecutive failed reconnects --follow makes before it gives up. */
#define FOLLOW_RETRIES 40

/* --follow after a round ended with RESULT: a node that went away or cut
 * off (UNAVAILABLE, a broken connection) is left for the next address of
 * AGENTHUB_ADDR's list, and the pane resumes after the last frame shown.
 * Returns 1 when connected again, 0 when the error stands. */
static int follow_reconnect(struct log_stream *stream, const struct grpc_client_result *result,
                            int *failures)
{
    struct cli_env *env = stream->env;
    int status = result->status;

    if (!stream->follow || stream->stopped ||
        (status != GRPC_STATUS_UNAVAILABLE && status != GRPC_STATUS_UNKNOWN &&
         status != GRPC_STATUS_INTERNAL && status != GRPC_STATUS_CANCELLED))
        return 0;
    fprintf(stderr, "agenthub: the pane ended (%s: %s); following on from seq %" PRIu64 "\n",
            grpc_status_name(status), result->message, stream->last_seq);
    do {
        struct timeval wait = {0, 100000 * (*failures < 10 ? *failures + 1 : 10)};
        if (++*failures > FOLLOW_RETRIES)
            return 0;
        cli_next_address(env);
        event_base_loopexit(env->base, &wait);
        event_base_dispatch(env->base);
    } while (cli_connect(env, 0) != 0);
    return 1;
}

int log_stream_run(struct log_stream *stream, struct grpc_client_result *result)
{
    int failures = 0;
    uint64_t since = 0;
    uint32_t tail = stream->tail ? stream->tail : TAIL_ALL;
    int rounds = 0;

    memset(result, 0, sizeof(*result));
    if (!stream->follow) {
        Compass__V1__GetAgentStatusResponse *status = NULL;
        if (cli_session_status(stream->env, stream->session_id, &status, result) != GRPC_STATUS_OK)
            return result->status;
        stream->edge_seq = status->statuses[0]->last_seq;
        protobuf_c_message_free_unpacked(&status->base, NULL);
        if (stream->edge_seq == 0 || stream->edge_seq <= stream->last_seq)
            return GRPC_STATUS_OK;
    }
    for (;;) {
        struct pane_round round;
        char trailer[32];

        if (pane_round_run(stream, since, tail, &round) != 0) {
            if (follow_reconnect(stream, &round.result, &failures)) {
                since = stream->last_seq;
                continue;
            }
            *result = round.result;
            return result->status;
        }
        rounds++;
        if (round.delivered)
            failures = 0;
        if (round.reached || stream->stopped)
            return GRPC_STATUS_OK;
        if (round.result.status == GRPC_STATUS_OUT_OF_RANGE && since > 0) {
            /* The resume point was evicted: say so and take what is retained. */
            fprintf(stderr,
                    "agenthub: frames after seq %" PRIu64 " were evicted; resuming "
                    "from the oldest retained\n",
                    since);
            since = 0;
            tail = TAIL_ALL;
            continue;
        }
        if (round.result.status != GRPC_STATUS_OK) {
            if (follow_reconnect(stream, &round.result, &failures)) {
                since = stream->last_seq;
                if (since == 0)
                    tail = stream->tail ? stream->tail : TAIL_ALL;
                continue;
            }
            *result = round.result;
            return result->status;
        }
        /* A clean end: a lag drop (resume after the trailer's seq) or the
         * session's end (a resumption that brings nothing). */
        if (round.delivered == 0 && (rounds > 1 || !stream->follow))
            return GRPC_STATUS_OK;
        if (grpc_client_result_trailer(&round.result, "agenthub-last-seq", trailer,
                                       sizeof(trailer)))
            since = strtoull(trailer, NULL, 10);
        if (since < stream->last_seq)
            since = stream->last_seq;
        if (since == 0)
            tail = TAIL_ALL;
    }
}

/* Flushes stdout.  Returns 0, or -1 once the reader went away (EPIPE). */
static int flush_stdout(void)
{
    return fflush(stdout) == 0 || errno != EPIPE ? 0 : -1;
}

struct log_view {
    int json;
    struct render_pane pane; /* the human view's open paragraph */
};

static int print_frame(void *arg, const Compass__V1__AgentSessionFrame *frame)
{
    struct log_view *view = arg;
    json_t *object;

    if (view->pane.hide_state && !frame->event)
        return 0;
    object = render_frame_json(frame);
    if (!object)
        return 0;
    if (view->json) {
        char *text = json_dumps(object, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (text)
            printf("%s\n", text);
        free(text);
    } else {
        render_pane_frame(&view->pane, object, stdout);
    }
    json_decref(object);
    return flush_stdout();
}

static const char log_usage[] =
    "usage: agenthub log S [--follow] [--json] [--tail N] [--no-state]\n"
    "Prints session S's retained log (a session id or provider:native_id): time, seq,\n"
    "type and a summary per line, the streamed deltas of one thinking or assistant\n"
    "message joined into one paragraph; or with --json one\n"
    "{\"seq\",\"ts_ms\",\"type\",\"data\"} object per frame.  --tail N starts N frames\n"
    "from the end.  --no-state hides the derived state frames.  Without --follow it\n"
    "exits at the live edge; with it, it keeps following, across lag drops, until\n"
    "the session ends.\n";

/* Parses a decimal uint64.  Returns 0, or -1. */
static int parse_u64(const char *text, uint64_t *out)
{
    char *end;

    if (text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno || *end ? -1 : 0;
}

int cli_log_main(int argc, char **argv)
{
    const char *tail_text = NULL, *pos[1];
    int follow = 0, json = 0, no_state = 0, n_pos, rv;
    const struct cli_flag flags[] = {{"--follow", &follow, NULL},     {"-f", &follow, NULL},
                                     {"--json", &json, NULL},         {"--tail", NULL, &tail_text},
                                     {"--no-state", &no_state, NULL}, {NULL, NULL, NULL}};
    struct log_view view;
    struct grpc_client_result result;
    struct log_stream stream;
    struct cli_target target;
    struct cli_env env;
    uint64_t tail = 0;

    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, flags, pos, 1, &n_pos, log_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != 1 || cli_target_parse(pos[0], &target) != 0 ||
        (tail_text && (parse_u64(tail_text, &tail) != 0 || tail == 0 || tail > TAIL_ALL))) {
        fputs(log_usage, stderr);
        return CLI_EUSAGE;
    }
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) == 0) {
        memset(&stream, 0, sizeof(stream));
        stream.env = &env;
        stream.session_id = target.session_id;
        stream.follow = follow;
        stream.tail = (uint32_t)tail;
        memset(&view, 0, sizeof(view));
        view.json = json;
        view.pane.hide_state = no_state;
        stream.emit = print_frame;
        stream.arg = &view;
        if (cli_target_resolve(&env, &target, &result) != GRPC_STATUS_OK ||
            log_stream_run(&stream, &result) != GRPC_STATUS_OK)
            rv = CLI_ESERVER;
        else
            rv = CLI_OK;
        render_pane_end(&view.pane, stdout);
        if (rv != CLI_OK)
            rv = cli_fail(&env, &result);
    }
    cli_env_free(&env);
    return rv;
}

struct bus_state {
    struct grpc_client_call *call;
    int json;
    uint64_t limit;
    uint64_t seen;
    int stopped; /* stdout went away */
    int done;
    struct grpc_client_result result;
};

static void bus_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct bus_state *state = arg;
    Compass__V1__SubscribeEventsResponse *event;
    json_t *object;
    char line[512];

    if (state->stopped || (state->limit && state->seen >= state->limit))
        return;
    event = compass__v1__subscribe_events_response__unpack(NULL, len, data);
    if (!event)
        return;
    object = render_event_json(event);
    protobuf_c_message_free_unpacked(&event->base, NULL);
    if (!object)
        return;
    if (state->json) {
        char *text = json_dumps(object, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (text)
            printf("%s\n", text);
        free(text);
    } else {
        render_line(object, line, sizeof(line));
        printf("%s  %s\n", line, json_string_value(json_object_get(object, "session_id")));
    }
    json_decref(object);
    state->seen++;
    if (flush_stdout() != 0)
        state->stopped = 1;
    if (state->stopped || (state->limit && state->seen >= state->limit))
        grpc_client_call_cancel(state->call);
}

static void bus_on_done(void *arg, const struct grpc_client_result *result)
{
    struct bus_state *state = arg;

    state->result = *result;
    state->done = 1;
}

static const char events_usage[] =
    "usage: agenthub events [--since SEQ --epoch EPOCH] [--json] [--limit N]\n"
    "Follows the global event bus (every session the caller may see), from after\n"
    "SEQ of server boot EPOCH (the \"epoch\" of --json lines) when given; else the\n"
    "current state first (server_status, then each session's latest status), then\n"
    "live.  --limit N exits after N events.  A resume point the bus cannot honour prints\n"
    "resync_required and exits.\n";

int cli_events_main(int argc, char **argv)
{
    static const struct grpc_client_call_handler handler = {bus_on_message, bus_on_done};
    const char *since_text = NULL, *epoch_text = NULL, *limit_text = NULL, *pos[1];
    int json = 0, n_pos, rv;
    const struct cli_flag flags[] = {{"--since", NULL, &since_text},
                                     {"--epoch", NULL, &epoch_text},
                                     {"--json", &json, NULL},
                                     {"--limit", NULL, &limit_text},
                                     {NULL, NULL, NULL}};
    Compass__V1__SubscribeEventsRequest request = COMPASS__V1__SUBSCRIBE_EVENTS_REQUEST__INIT;
    struct bus_state state;
    struct cli_env env;

    memset(&state, 0, sizeof(state));
    /* The records and batch windows render too (render.c). */
    request.agenthub_payloads = 1;
    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, flags, pos, 0, &n_pos, events_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if ((since_text && parse_u64(since_text, &request.since_seq) != 0) ||
        (epoch_text && parse_u64(epoch_text, &request.instance_epoch) != 0) ||
        (limit_text && parse_u64(limit_text, &state.limit) != 0)) {
        fputs(events_usage, stderr);
        return CLI_EUSAGE;
    }
    state.json = json;
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) == 0) {
        state.call =
            grpc_client_call_start(env.client, "/compass.v1.CompassService/SubscribeEvents",
                                   env.token, 0, &handler, &state);
        if (!state.call) {
            state.result.status = GRPC_STATUS_UNAVAILABLE;
            snprintf(state.result.message, sizeof(state.result.message), "connection unavailable");
        } else {
            grpc_client_call_send(state.call, &request.base);
            grpc_client_call_close_send(state.call);
            while (!state.done)
                if (event_base_loop(env.base, EVLOOP_ONCE) != 0)
                    break;
        }
        if (state.result.status == GRPC_STATUS_OK ||
            ((state.stopped || (state.limit && state.seen >= state.limit)) &&
             state.result.status == GRPC_STATUS_CANCELLED))
            rv = CLI_OK;
        else
            rv = cli_fail(&env, &state.result);
    }
    cli_env_free(&env);
    return rv;
}
