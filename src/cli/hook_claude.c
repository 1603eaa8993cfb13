/* agenthub hook claude: the Claude Code hook shim.
 *
 * Reads one hook's JSON on stdin as it streams in, keeping only what it
 * needs (hook_input.c), maps it (hook_map.c) and sends it.  A hook
 * must never break the agent: whatever happens it exits 0 within 2 s.  The
 * hook's ops go to the spool first (hook_spool.c: one append, on disk before
 * anything is sent); then, when the server answers, one hook at a time
 * delivers the spool oldest first under a 1.5 s budget, starting a call only
 * when it fits the budget.  So a hook killed at any point loses nothing it
 * accepted, and concurrent hooks keep the order they appended in. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/hook_map.h"
#include "cli/hook_spool.h"
#include "grpc/grpc_wire.h"

#define HOOK_BUDGET_MS    1500
#define HOOK_HARD_LIMIT_S 2
/* Stdin is read for at most this long: a writer that never closes it
 * leaves the rest of the budget to spooling and sending. */
#define HOOK_STDIN_MS          1000
#define HOOK_READ_CHUNK        65536u
#define FEATURE_RESOURCE_KINDS 0x4000u
/* One AppendResourceOutput carries at most this much (the server's bound). */
#define HOOK_CALL_MAX 65536u
/* A call is started only with this much budget left (or twice the slowest
 * call so far, when that is more). */
#define HOOK_CALL_MIN_MS 100
/* How long a hook waits for the lock to keep the spool in bounds. */
#define HOOK_PREPARE_WAIT_MS 50

struct hook_ctx {
    struct cli_env env;
    uint64_t terminal; /* AGENTHUB_TERMINAL_ID, 0 when unset */
    int debug;
    int reachable;       /* 0 once a call failed for transport reasons */
    uint64_t slowest_ms; /* the slowest call so far */
    /* The idempotency_key of the next append: the spooled op's place on
     * disk (segment file and offset), the same on every retry, so the
     * server stores a call it already holds once.  "" when not spooled. */
    char key[64];
};

static void hook_log(const struct hook_ctx *ctx, const char *what, const char *detail)
{
    if (ctx->debug)
        fprintf(stderr, "agenthub hook: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static void on_alarm(int sig)
{
    _exit(0);
}

/* 1 when STATUS means the server was not reached (keep the op for later). */
static int status_retryable(int status)
{
    return status == GRPC_STATUS_UNAVAILABLE || status == GRPC_STATUS_DEADLINE_EXCEEDED ||
           status == GRPC_STATUS_CANCELLED || status == GRPC_STATUS_RESOURCE_EXHAUSTED ||
           status == GRPC_STATUS_UNKNOWN || status == GRPC_STATUS_INTERNAL;
}

/* Spawns (or finds) the op's session under the terminal.  Returns the gRPC
 * status; *RESOURCE_ID is set on OK. */
static int op_spawn(struct hook_ctx *ctx, const json_t *op, uint64_t *resource_id,
                    struct grpc_client_result *result)
{
    Compass__V1__SpawnResourceRequest request = COMPASS__V1__SPAWN_RESOURCE_REQUEST__INIT;
    Compass__V1__SpawnResourceResponse *response = NULL;
    int rv;

    request.kind = COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_AGENT_SESSION;
    request.parent = ctx->terminal;
    request.provider = (char *)json_string_value(json_object_get(op, "provider"));
    request.native_id = (char *)json_string_value(json_object_get(op, "native_id"));
    if (!request.provider || !request.native_id) {
        result->status = GRPC_STATUS_INVALID_ARGUMENT;
        return result->status;
    }
    rv = cli_unary(&ctx->env, "/compass.v1.ResourceService/SpawnResource", &request.base,
                   &compass__v1__spawn_resource_response__descriptor,
                   (ProtobufCMessage **)&response, result);
    if (rv == GRPC_STATUS_OK) {
        *resource_id = response->resource_id;
        protobuf_c_message_free_unpacked(&response->base, NULL);
    }
    return rv;
}

/* The provider and native id an op targets (NULL when absent). */
static const char *op_str(const json_t *op, const char *key)
{
    return json_string_value(json_object_get(op, key));
}

/* 1 when OPS[I] is an append to PROVIDER:NATIVE_ID. */
static int same_append(const json_t *ops, size_t i, const char *provider, const char *native_id)
{
    const json_t *op = json_array_get(ops, i);
    const char *kind = op_str(op, "op"), *p = op_str(op, "provider"), *n = op_str(op, "native_id");

    return kind && p && n && strcmp(kind, "append") == 0 && strcmp(p, provider) == 0 &&
           strcmp(n, native_id) == 0 && json_object_get(op, "record");
}

/* Appends the records of OPS[FIRST..FIRST+*COUNT) in one call, taking at most
 * *COUNT consecutive appends to the same session that fit a call (*COUNT is
 * lowered to what was taken).  Returns the gRPC status; OK for a run that
 * cannot be encoded (dropped). */
static int append_run(struct hook_ctx *ctx, const json_t *ops, size_t first, size_t *count)
{
    const json_t *op = json_array_get(ops, first);
    const char *provider = op_str(op, "provider"), *native_id = op_str(op, "native_id");
    Compass__V1__AppendResourceOutputRequest append =
        COMPASS__V1__APPEND_RESOURCE_OUTPUT_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    struct grpc_client_result result;
    char *body = malloc(HOOK_CALL_MAX);
    size_t len = 0, taken = 0;
    int rv;

    if (!body || !provider || !native_id) {
        free(body);
        *count = 1;
        return GRPC_STATUS_OK;
    }
    while (taken < *count && same_append(ops, first + taken, provider, native_id)) {
        char *line = json_dumps(json_object_get(json_array_get(ops, first + taken), "record"),
                                JSON_COMPACT | JSON_PRESERVE_ORDER);
        size_t n = line ? strlen(line) : 0;
        if (!line || len + n + 1 > HOOK_CALL_MAX) {
            free(line);
            if (taken == 0)
                taken = 1; /* a record no call can carry: dropped */
            break;
        }
        memcpy(body + len, line, n); /* NOLINT(bugprone-not-null-terminated-result): bytes */
        body[len + n] = '\n';
        len += n + 1;
        free(line);
        taken++;
    }
    *count = taken;
    if (len == 0) {
        free(body);
        return GRPC_STATUS_OK;
    }
    append.bytes.data = (uint8_t *)body;
    append.bytes.len = len;
    append.provider = (char *)provider;
    append.native_id = (char *)native_id;
    append.idempotency_key = ctx->key;
    rv = cli_unary(&ctx->env, "/compass.v1.ResourceService/AppendResourceOutput", &append.base,
                   &compass__v1__append_resource_output_response__descriptor, &response, &result);
    free(body);
    if (response)
        protobuf_c_message_free_unpacked(response, NULL);
    if (rv != GRPC_STATUS_OK) {
        char detail[1100];
        snprintf(detail, sizeof(detail), "%s: %s", grpc_status_name(rv), result.message);
        hook_log(ctx, "append", detail);
    }
    return rv;
}

/* Sends OPS[I] (with the appends after it to the same session, in one call).
 * Returns the gRPC status; *COUNT is how many ops the call covered.  OK also
 * for ops that cannot be sent at all, such as open without a terminal: they
 * are dropped. */
static int op_send(struct hook_ctx *ctx, const json_t *ops, size_t i, size_t *count)
{
    const json_t *op = json_array_get(ops, i);
    const char *kind = op_str(op, "op");
    struct grpc_client_result result;
    ProtobufCMessage *response = NULL;
    uint64_t resource_id = 0;
    int rv;

    memset(&result, 0, sizeof(result));
    *count = 1;
    if (!kind)
        return GRPC_STATUS_OK;
    if (strcmp(kind, "append") == 0) {
        size_t run = json_array_size(ops) - i;
        rv = append_run(ctx, ops, i, &run);
        if (rv == GRPC_STATUS_OK || status_retryable(rv) || run == 1) {
            *count = run;
            return rv;
        }
        /* A refused batch: one at a time, so one bad record drops alone. */
        run = 1;
        return append_run(ctx, ops, i, &run);
    }
    if (strcmp(kind, "open") != 0 && strcmp(kind, "close") != 0)
        return GRPC_STATUS_OK;
    if (strcmp(kind, "close") == 0) {
        /* Closing names the session by (provider, native_id): no terminal needed. */
        Compass__V1__CloseResourceRequest close = COMPASS__V1__CLOSE_RESOURCE_REQUEST__INIT;
        close.provider = (char *)json_string_value(json_object_get(op, "provider"));
        close.native_id = (char *)json_string_value(json_object_get(op, "native_id"));
        if (!close.provider || !close.native_id)
            return GRPC_STATUS_OK;
        rv = cli_unary(&ctx->env, "/compass.v1.ResourceService/CloseResource", &close.base,
                       &compass__v1__close_resource_response__descriptor, &response, &result);
        if (response)
            protobuf_c_message_free_unpacked(response, NULL);
    } else if (!ctx->terminal) {
        hook_log(ctx, kind, "AGENTHUB_TERMINAL_ID is not set; skipped");
        return GRPC_STATUS_OK;
    } else {
        rv = op_spawn(ctx, op, &resource_id, &result);
    }
    if (rv != GRPC_STATUS_OK) {
        char detail[1100];
        snprintf(detail, sizeof(detail), "%s: %s", grpc_status_name(rv), result.message);
        hook_log(ctx, kind, detail);
    }
    return rv;
}

/* The spool path: AGENTHUB_SPOOL, else $XDG_STATE_HOME/agenthub/spool.jsonl,
 * else ~/.local/state/agenthub/spool.jsonl (directories created).  Returns 0,
 * or -1 when no home is known. */
static int spool_path(char *out, size_t out_size)
{
    const char *spool = getenv("AGENTHUB_SPOOL");
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[4096];

    if (spool && spool[0]) {
        snprintf(out, out_size, "%s", spool);
        return 0;
    }
    if (state && state[0]) {
        snprintf(dir, sizeof(dir), "%s/agenthub", state);
        mkdir(state, 0700);
    } else if (home && home[0]) {
        snprintf(dir, sizeof(dir), "%s/.local", home);
        mkdir(dir, 0700);
        snprintf(dir, sizeof(dir), "%s/.local/state", home);
        mkdir(dir, 0700);
        snprintf(dir, sizeof(dir), "%s/.local/state/agenthub", home);
    } else {
        return -1;
    }
    mkdir(dir, 0700);
    snprintf(out, out_size, "%s/spool.jsonl", dir);
    return 0;
}

/* The cap on the spool's pending bytes: AGENTHUB_SPOOL_MAX_BYTES, else the
 * default (0 here). */
static uint64_t spool_cap(void)
{
    const char *text = getenv("AGENTHUB_SPOOL_MAX_BYTES");
    char *end;
    unsigned long long n;

    if (!text || !text[0] || text[0] == '-')
        return 0;
    n = strtoull(text, &end, 10);
    return *end == '\0' ? (uint64_t)n : 0;
}

/* OPS as spool lines, one compact JSON object each.  Returns them
 * (malloc'd, *LEN bytes) or NULL. */
static char *ops_lines(const json_t *ops, size_t *len)
{
    size_t cap = 4096, i;
    char *text = malloc(cap);

    *len = 0;
    if (!text)
        return NULL;
    for (i = 0; i < json_array_size(ops); i++) {
        char *line = json_dumps(json_array_get(ops, i), JSON_COMPACT | JSON_PRESERVE_ORDER);
        size_t n = line ? strlen(line) : 0;
        if (!line)
            continue;
        if (*len + n + 1 > cap) {
            char *more;
            while (*len + n + 1 > cap)
                cap *= 2;
            more = realloc(text, cap);
            if (!more) {
                free(line);
                free(text);
                return NULL;
            }
            text = more;
        }
        memcpy(text + *len, line, n); /* NOLINT(bugprone-not-null-terminated-result): bytes */
        text[*len + n] = '\n';
        *len += n + 1;
        free(line);
    }
    return text;
}

/* Keeps the spool within its bounds before LEN new bytes go in: seals a
 * full open segment and drops the oldest lines over the cap.  Skipped when
 * another hook holds the delivery lock (it does the same). */
static void spool_prepare(struct hook_ctx *ctx, struct hook_spool *sp, size_t len)
{
    long dropped;

    if (hook_spool_lock(sp, cli_now_ms() + HOOK_PREPARE_WAIT_MS, 0) != 0)
        return;
    hook_spool_seal(sp, sp->segment_bytes, ctx->env.deadline_ms);
    dropped = hook_spool_enforce_cap(sp, len, ctx->env.deadline_ms);
    if (dropped > 0) {
        char detail[64];
        snprintf(detail, sizeof(detail), "over its cap: %ld oldest ops dropped", dropped);
        hook_log(ctx, "spool", detail);
    }
    hook_spool_unlock(sp);
}

/* 1 when a call still fits the budget: never start what cannot finish, so
 * an acknowledged call is always recorded before the deadline. */
static int time_for_call(const struct hook_ctx *ctx)
{
    uint64_t now = cli_now_ms(), need = 2 * ctx->slowest_ms;

    if (need < HOOK_CALL_MIN_MS)
        need = HOOK_CALL_MIN_MS;
    return ctx->reachable && now + need <= ctx->env.deadline_ms;
}

/* op_send, timed for time_for_call. */
static int op_send_timed(struct hook_ctx *ctx, const json_t *ops, size_t i, size_t *count)
{
    uint64_t start = cli_now_ms();
    int rv = op_send(ctx, ops, i, count);
    uint64_t took = cli_now_ms() - start;

    if (took > ctx->slowest_ms)
        ctx->slowest_ms = took;
    if (status_retryable(rv))
        ctx->reachable = 0;
    return rv;
}

/* Delivers SEG window by window, recording each acknowledged call.
 * Returns 0 when the segment is delivered (and removed), 1 when delivery
 * stopped (unreachable, out of time, or a file error). */
static int deliver_segment(struct hook_ctx *ctx, struct hook_spool *sp,
                           struct hook_spool_segment *seg)
{
    struct stat st;
    int keyed = fstat(seg->fd, &st) == 0;

    while (seg->offset < seg->size) {
        struct hook_spool_window win;
        uint64_t start = seg->offset;
        size_t i = 0;
        int failed;
        if (hook_spool_read(seg, &win) != 0) {
            hook_spool_window_free(&win);
            return 1;
        }
        while (i < json_array_size(win.ops)) {
            size_t count;
            int rv;
            if (!time_for_call(ctx)) {
                hook_spool_window_free(&win);
                return 1;
            }
            if (keyed)
                snprintf(ctx->key, sizeof(ctx->key), "spool-%llx-%llx-%llx",
                         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                         (unsigned long long)(i ? win.ends[i - 1] : start));
            rv = op_send_timed(ctx, win.ops, i, &count);
            ctx->key[0] = '\0';
            if (status_retryable(rv)) {
                hook_spool_window_free(&win);
                return 1;
            }
            i += count;
            if (hook_spool_advance(sp, seg, win.ends[i - 1]) != 0) {
                hook_log(ctx, "spool", "cannot record a delivery");
                hook_spool_window_free(&win);
                return 1;
            }
        }
        /* Past the window's last op: lines that were not ops. */
        failed = hook_spool_advance(sp, seg, win.end) != 0;
        hook_spool_window_free(&win);
        if (failed)
            return 1;
    }
    return hook_spool_advance(sp, seg, seg->size) == 0 ? 0 : 1;
}

/* Under the delivery lock: seals what hooks appended, then delivers the
 * sealed segments oldest first, for as long as the budget allows (hooks
 * appending meanwhile are picked up by the next round). */
static void deliver(struct hook_ctx *ctx, struct hook_spool *sp)
{
    while (time_for_call(ctx)) {
        struct hook_spool_segment seg;
        int stopped;
        hook_spool_seal(sp, 1, ctx->env.deadline_ms);
        hook_spool_enforce_cap(sp, 0, ctx->env.deadline_ms);
        if (hook_spool_oldest(sp, &seg, ctx->env.deadline_ms) <= 0)
            break;
        stopped = deliver_segment(ctx, sp, &seg);
        hook_spool_segment_close(&seg);
        if (stopped)
            break;
    }
}

/* Tells the hook's session how many ops the cap dropped, once the server
 * acknowledged the rest: a notification record of kind spool_dropped. */
static void report_dropped(struct hook_ctx *ctx, struct hook_spool *sp, const char *native_id)
{
    uint64_t dropped = hook_spool_dropped(sp);
    json_t *ops;
    size_t count = 1;

    if (dropped == 0 || !time_for_call(ctx))
        return;
    ops = json_pack("[{s:s, s:s, s:s, s:{s:s, s:{s:s, s:I}}}]", "op", "append", "provider",
                    HOOK_PROVIDER, "native_id", native_id, "record", "type", "notification", "data",
                    "kind", "spool_dropped", "ops", (json_int_t)dropped);
    if (ops && append_run(ctx, ops, 0, &count) == GRPC_STATUS_OK && count == 1)
        hook_spool_reported(sp, dropped);
    json_decref(ops);
}

/* Sends OPS straight, in order, when there is no spool to keep them. */
static void send_unspooled(struct hook_ctx *ctx, const json_t *ops)
{
    size_t i = 0, count;

    while (i < json_array_size(ops) && time_for_call(ctx)) {
        if (status_retryable(op_send_timed(ctx, ops, i, &count)))
            return;
        i += count;
    }
}

/* Asks GetServerInfo whether the server speaks RESOURCE_KINDS.  Returns 1,
 * 0 (no), or -1 (not reached). */
static int server_has_resource_kinds(struct hook_ctx *ctx)
{
    Compass__V1__GetServerInfoRequest request = COMPASS__V1__GET_SERVER_INFO_REQUEST__INIT;
    Compass__V1__GetServerInfoResponse *response = NULL;
    struct grpc_client_result result;
    int rv;

    rv = cli_unary(&ctx->env, "/compass.v1.CompassService/GetServerInfo", &request.base,
                   &compass__v1__get_server_info_response__descriptor,
                   (ProtobufCMessage **)&response, &result);
    if (rv == GRPC_STATUS_UNIMPLEMENTED)
        return 0;
    if (rv != GRPC_STATUS_OK) {
        hook_log(ctx, "GetServerInfo", result.message);
        return -1;
    }
    rv = (response->features & FEATURE_RESOURCE_KINDS) ? 1 : 0;
    protobuf_c_message_free_unpacked(&response->base, NULL);
    return rv;
}

/* The fallback for servers without resource kinds: one state word per
 * hook, for the terminal
 * (AGENTHUB_TERMINAL_ID) and the session (AGENTHUB_SESSION_ID, else the
 * hook's session_id). */
static void report_state(struct hook_ctx *ctx, const struct hook_plan *plan)
{
    Compass__V1__ReportAgentStateRequest request = COMPASS__V1__REPORT_AGENT_STATE_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    struct grpc_client_result result;
    const char *session = getenv("AGENTHUB_SESSION_ID");

    if (!plan->state_word)
        return;
    request.state = (char *)plan->state_word;
    request.resource_id = ctx->terminal; /* the fallback reports per terminal */
    request.session_id = (char *)(session && session[0] ? session : plan->native_id);
    if (cli_unary(&ctx->env, "/compass.v1.ResourceService/ReportAgentState", &request.base,
                  &compass__v1__report_agent_state_response__descriptor, &response,
                  &result) == GRPC_STATUS_OK)
        protobuf_c_message_free_unpacked(response, NULL);
    else
        hook_log(ctx, "ReportAgentState", result.message);
}

/* Reads the hook's stdin into IN, chunk by chunk as it arrives, until its
 * end, until it cannot be a hook, or until DEADLINE_MS.  Returns 0 when
 * what was read is one complete JSON object (followed by whitespace only:
 * a writer that leaves stdin open after the object is not waited for past
 * the deadline), 1 when the deadline came first, else -1. */
static int read_hook(struct hook_input *in, uint64_t deadline_ms)
{
    char *buf = malloc(HOOK_READ_CHUNK);
    int timed_out = 0;

    if (!buf)
        return -1;
    for (;;) {
        struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
        uint64_t now = cli_now_ms();
        ssize_t n;
        int ready;
        if (now >= deadline_ms) {
            timed_out = 1;
            break;
        }
        ready = poll(&pfd, 1, (int)(deadline_ms - now));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0)
            timed_out = 1;
        if (ready <= 0)
            break;
        n = read(STDIN_FILENO, buf, HOOK_READ_CHUNK);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0 || hook_input_feed(in, buf, (size_t)n) != 0)
            break; /* the end, an error, or no hook */
    }
    free(buf);
    if (hook_input_end(in) == 0)
        return 0;
    return timed_out && !in->failed ? 1 : -1;
}

static const char hook_usage[] =
    "usage: agenthub hook claude < HOOK.json\n"
    "The Claude Code hook shim: maps the hook events that change what the agent is\n"
    "doing (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,\n"
    "PostToolUseFailure, PermissionRequest, PermissionDenied, Notification,\n"
    "Elicitation, ElicitationResult, PreCompact, PostCompact, SubagentStart,\n"
    "SubagentStop, Stop, StopFailure, SessionEnd) to records of the session\n"
    "provider claude, native id = the hook's session_id; other events are ignored.\n"
    "Records carry names and lengths, never prompt text, tool input or responses;\n"
    "errors only as their kind.  Always exits 0\n"
    "within 2 s.  Stdin of any size is read as it arrives, for at most 1 s, keeping\n"
    "only what the records need.  Every hook's records are spooled first and\n"
    "delivered oldest first when the server answers; over the spool's cap the oldest\n"
    "are dropped, and the count reaches the session as a notification of kind\n"
    "spool_dropped.\n"
    "env: AGENTHUB_TERMINAL_ID (parent terminal), AGENTHUB_EMIT_RAW=1 (provider_raw),\n"
    "AGENTHUB_SPOOL (default $XDG_STATE_HOME/agenthub/spool.jsonl or\n"
    "~/.local/state/agenthub/spool.jsonl; segments are kept next to it),\n"
    "AGENTHUB_SPOOL_MAX_BYTES (the cap on spooled bytes, default 67108864),\n"
    "AGENTHUB_HOOK_DEBUG=1 (log to stderr).\n";

static int hook_claude(int argc, char **argv)
{
    struct hook_ctx ctx;
    struct hook_plan plan;
    struct hook_spool spool;
    const char *terminal = getenv("AGENTHUB_TERMINAL_ID");
    const char *raw = getenv("AGENTHUB_EMIT_RAW");
    const char *debug = getenv("AGENTHUB_HOOK_DEBUG");
    struct hook_input hook;
    char *lines, path[4200];
    size_t len = 0;
    int spooled = 0, features, got;
    uint64_t start = cli_now_ms(), took;

    memset(&ctx, 0, sizeof(ctx));
    cli_env_init(&ctx.env);
    for (int i = 1; i < argc; i++)
        if (cli_common_flag(&ctx.env, argc, argv, &i) <= 0)
            break;
    ctx.env.quiet = 1;
    ctx.env.deadline_ms = start + HOOK_BUDGET_MS;
    ctx.debug = debug && strcmp(debug, "1") == 0;
    ctx.reachable = 1;
    if (terminal && terminal[0]) {
        char *end;
        ctx.terminal = strtoull(terminal[0] == '@' ? terminal + 1 : terminal, &end, 10);
        if (*end)
            ctx.terminal = 0;
    }
    hook_input_init(&hook);
    got = read_hook(&hook, start + HOOK_STDIN_MS);
    if (got != 0 || hook_map(&hook, raw && strcmp(raw, "1") == 0, &plan) != 0) {
        hook_log(&ctx, "ignored",
                 got == 1 ? "stdin did not end in time" : "stdin is not a hook with a session_id");
        hook_input_free(&hook);
        return 0;
    }
    hook_input_free(&hook);
    if (json_array_size(plan.ops) == 0) {
        hook_plan_free(&plan);
        return 0;
    }
    /* On disk before anything is sent: whatever happens next, it is kept. */
    lines = ops_lines(plan.ops, &len);
    if (lines && spool_path(path, sizeof(path)) == 0 &&
        hook_spool_init(&spool, path, spool_cap()) == 0) {
        spool_prepare(&ctx, &spool, len);
        spooled = hook_spool_append(&spool, lines, len, ctx.env.deadline_ms) == 0;
        if (!spooled)
            hook_log(&ctx, "spool", "cannot append; sending directly");
    }
    free(lines);
    took = cli_now_ms();
    features = cli_connect(&ctx.env, 0) == 0 ? server_has_resource_kinds(&ctx) : -1;
    ctx.slowest_ms = cli_now_ms() - took;
    if (features == 0) {
        report_state(&ctx, &plan); /* spooled ops wait for a server that takes them */
    } else if (features > 0 && !spooled) {
        send_unspooled(&ctx, plan.ops);
    } else if (features > 0 && hook_spool_lock(&spool, ctx.env.deadline_ms, 1) == 0) {
        deliver(&ctx, &spool);
        report_dropped(&ctx, &spool, plan.native_id);
    }
    if (spooled)
        hook_spool_close(&spool);
    hook_plan_free(&plan);
    cli_env_free(&ctx.env);
    return 0;
}

int cli_hook_main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(hook_usage, stdout);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "claude") == 0 &&
        (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        fputs(hook_usage, stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "claude") == 0) {
        signal(SIGALRM, on_alarm);
        alarm(HOOK_HARD_LIMIT_S);
        hook_claude(argc - 1, argv + 1);
        return 0;
    }
    fputs(hook_usage, stderr);
    return 2;
}
