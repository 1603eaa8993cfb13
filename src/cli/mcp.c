/* agenthub mcp: an MCP server on stdio (protocol in mcp_proto.c).  Only
 * protocol goes to stdout; diagnostics go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/log_stream.h"
#include "cli/mcp_proto.h"
#include "cli/render.h"
#include "grpc/grpc_wire.h"

struct mcp_ctx {
    struct cli_env env;
};

struct text_buffer {
    char *data;
    size_t len;
    size_t cap;
    int failed;
};

static void text_append(struct text_buffer *buf, const char *text)
{
    size_t n = strlen(text);

    if (buf->failed)
        return;
    if (buf->len + n + 2 > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 1024;
        char *bigger;
        while (buf->len + n + 2 > cap)
            cap *= 2;
        bigger = realloc(buf->data, cap);
        if (!bigger) {
            buf->failed = 1;
            return;
        }
        buf->data = bigger;
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, text, n);
    buf->len += n;
    buf->data[buf->len++] = '\n';
    buf->data[buf->len] = '\0';
}

static int collect_frame(void *arg, const Compass__V1__AgentSessionFrame *frame)
{
    json_t *object = render_frame_json(frame);
    char *text = object ? json_dumps(object, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    if (text)
        text_append(arg, text);
    free(text);
    json_decref(object);
    return 0;
}

/* "STATUS_NAME: message" as a malloc'd string. */
static char *failure_text(const struct grpc_client_result *result)
{
    char buf[1200];

    snprintf(buf, sizeof(buf), "%s: %s", grpc_status_name(result->status), result->message);
    return strdup(buf);
}

static int connect_or_fail(struct mcp_ctx *ctx, char **text)
{
    if (cli_connect(&ctx->env, 0) == 0)
        return 0;
    *text = strdup("UNAVAILABLE: cannot connect to the agenthub server");
    return -1;
}

static int tool_log(void *arg, const char *session, uint32_t tail, char **text)
{
    struct mcp_ctx *ctx = arg;
    struct grpc_client_result result;
    struct text_buffer buf = {NULL, 0, 0, 0};
    struct log_stream stream;
    struct cli_target target;

    if (cli_target_parse(session, &target) != 0) {
        *text = strdup("INVALID_ARGUMENT: bad session");
        return -1;
    }
    if (connect_or_fail(ctx, text) != 0)
        return -1;
    memset(&stream, 0, sizeof(stream));
    stream.env = &ctx->env;
    stream.session_id = target.session_id;
    stream.tail = tail;
    stream.emit = collect_frame;
    stream.arg = &buf;
    if (cli_target_resolve(&ctx->env, &target, &result) != GRPC_STATUS_OK ||
        log_stream_run(&stream, &result) != GRPC_STATUS_OK) {
        free(buf.data);
        *text = failure_text(&result);
        return -1;
    }
    if (buf.failed) {
        free(buf.data);
        *text = strdup("RESOURCE_EXHAUSTED: out of memory");
        return -1;
    }
    *text = buf.data ? buf.data : strdup("");
    return 0;
}

static int tool_emit(void *arg, const char *session, const char *type, json_t *data, char **text)
{
    struct mcp_ctx *ctx = arg;
    Compass__V1__AppendResourceOutputResponse *response = NULL;
    struct grpc_client_result result;
    struct cli_target target;
    char buf[64];

    if (cli_target_parse(session, &target) != 0) {
        *text = strdup("INVALID_ARGUMENT: bad session");
        return -1;
    }
    if (connect_or_fail(ctx, text) != 0)
        return -1;
    if (cli_emit_record(&ctx->env, &target, type, data, &response, &result) != GRPC_STATUS_OK) {
        *text = failure_text(&result);
        return -1;
    }
    snprintf(buf, sizeof(buf), "appended seq %llu", (unsigned long long)response->last_seq);
    protobuf_c_message_free_unpacked(&response->base, NULL);
    *text = strdup(buf);
    return 0;
}

static const char mcp_usage[] =
    "usage: agenthub mcp\n"
    "An MCP server on stdio (newline-delimited JSON-RPC 2.0) with the tools\n"
    "agenthub_agent_log {session, tail} and agenthub_agent_emit {session, type, data}.\n"
    "A line over 1 MiB is answered with a JSON-RPC Invalid Request error (-32600)\n"
    "and skipped.\n";

int cli_mcp_main(int argc, char **argv)
{
    struct mcp_ctx ctx;
    struct mcp_server server;
    struct mcp_tools tools = {tool_log, tool_emit, &ctx};
    const char *pos[1];
    char *line = NULL;
    size_t cap = 0, len = 0;
    enum mcp_read got;
    int n_pos, rv;

    memset(&ctx, 0, sizeof(ctx));
    cli_env_init(&ctx.env);
    rv = cli_parse(&ctx.env, argc, argv, NULL, pos, 0, &n_pos, mcp_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    ctx.env.quiet = 1;
    mcp_server_init(&server, &tools);
    while ((got = mcp_read_line(stdin, &line, &cap, &len)) != MCP_READ_EOF) {
        char *reply =
            got == MCP_READ_LINE ? mcp_handle_line(&server, line, len) : mcp_unread_line_reply(got);
        if (reply) {
            fputs(reply, stdout);
            fputc('\n', stdout);
            fflush(stdout);
            free(reply);
        }
    }
    free(line);
    cli_env_free(&ctx.env);
    return CLI_OK;
}
