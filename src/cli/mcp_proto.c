/* mcp_proto: MCP JSON-RPC message handling (mcp_proto.h). */
#include "cli/mcp_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MCP_LOG_TAIL_DEFAULT 50
#define MCP_LOG_TAIL_MAX     100000

/* Newest first: a client asking for a version not listed gets the newest. */
static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                 "2024-11-05"};

void mcp_server_init(struct mcp_server *server, const struct mcp_tools *tools)
{
    memset(server, 0, sizeof(*server));
    server->tools = tools;
}

/* Serializes and consumes MESSAGE.  Returns the line, or NULL. */
static char *finish(json_t *message)
{
    char *text = message ? json_dumps(message, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

    json_decref(message);
    return text;
}

static json_t *reply_result(const json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
                     result ? result : json_object());
}

/* An error reply.  Without an id to echo (unparsable JSON, a missing or
 * invalid id) the reply has no "id" member: MCP's schema allows only a
 * string or a number there, and SDK clients drop a reply with "id": null. */
static json_t *reply_error(const json_t *id, int code, const char *message)
{
    if (!id)
        return json_pack("{s:s, s:{s:i, s:s}}", "jsonrpc", "2.0", "error", "code", code, "message",
                         message);
    return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", code,
                     "message", message);
}

/* 0 when every key of ARGS is one of ALLOWED (NULL-terminated); otherwise
 * -1 with the first other key in *UNKNOWN.  Both tools declare
 * additionalProperties: false, so an argument they do not know is refused
 * rather than silently ignored. */
static int arguments_known(const json_t *args, const char *const *allowed, const char **unknown)
{
    const char *key;
    json_t *value;

    json_object_foreach((json_t *)args, key, value)
    {
        size_t i = 0;
        while (allowed[i] && strcmp(allowed[i], key) != 0)
            i++;
        if (!allowed[i]) {
            *unknown = key;
            return -1;
        }
    }
    return 0;
}

static json_t *initialize_result(struct mcp_server *server, const json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *chosen = supported_versions[0];

    for (size_t i = 0; asked && i < sizeof(supported_versions) / sizeof(supported_versions[0]); i++)
        if (strcmp(asked, supported_versions[i]) == 0)
            chosen = supported_versions[i];
    snprintf(server->protocol, sizeof(server->protocol), "%s", chosen);
    return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}, s:s}", "protocolVersion", chosen,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "agenthub",
                     "version", "0.1.0", "instructions",
                     "agenthub_agent_log reads an agent session's retained log; "
                     "agenthub_agent_emit appends a lifecycle record to it.");
}

static json_t *tools_list(void)
{
    return json_pack(
        "{s:[{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:i, s:s}}, s:[s], s:b}},"
        "    {s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:[s,s,s,s,s,s,s,s,s,s], s:s},"
        "                              s:{s:s, s:s}}, s:[s,s], s:b}}]}",
        "tools",
        /* agenthub_agent_log */
        "name", "agenthub_agent_log", "description",
        "Read the last frames of an agent session's log, one JSON object per line "
        "({\"seq\",\"ts_ms\",\"type\",\"data\"}).",
        "inputSchema", "type", "object", "properties", "session", "type", "string", "description",
        "session id or provider:native_id", "tail", "type", "integer", "minimum", 1, "maximum",
        MCP_LOG_TAIL_MAX, "description", "how many frames from the end (default 50)", "required",
        "session", "additionalProperties", 0,
        /* agenthub_agent_emit */
        "name", "agenthub_agent_emit", "description",
        "Append one AgentEventsJsonlV1 record to an agent session's log.", "inputSchema", "type",
        "object", "properties", "session", "type", "string", "description",
        "session id or provider:native_id", "type", "type", "string", "enum", "session_start",
        "prompt", "tool_start", "tool_end", "notification", "ask", "stop", "session_end", "state",
        "provider_raw", "description", "the record type", "data", "type", "object", "description",
        "the record's data object", "required", "session", "type", "additionalProperties", 0);
}

static json_t *tool_result(char *text, int is_error)
{
    json_t *result = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                               text ? text : (is_error ? "tool failed" : ""), "isError", is_error);

    free(text);
    return result;
}

/* tools/call.  Returns the response. */
static json_t *tools_call(struct mcp_server *server, const json_t *id, const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    static const char *const log_arguments[] = {"session", "tail", NULL};
    static const char *const emit_arguments[] = {"session", "type", "data", NULL};
    const char *session, *unknown;
    char *text = NULL, message[160];
    int rv;

    if (!name)
        return reply_error(id, MCP_INVALID_PARAMS, "tools/call needs a tool name");
    if (strcmp(name, "agenthub_agent_log") != 0 && strcmp(name, "agenthub_agent_emit") != 0)
        return reply_error(id, MCP_INVALID_PARAMS, "unknown tool");
    if (args && !json_is_object(args))
        return reply_error(id, MCP_INVALID_PARAMS, "arguments must be an object");
    if (args && arguments_known(
                    args, strcmp(name, "agenthub_agent_log") == 0 ? log_arguments : emit_arguments,
                    &unknown) != 0) {
        snprintf(message, sizeof(message), "unknown argument '%.100s'", unknown);
        return reply_error(id, MCP_INVALID_PARAMS, message);
    }
    session = json_string_value(json_object_get(args, "session"));
    if (!session || !session[0])
        return reply_error(id, MCP_INVALID_PARAMS, "argument 'session' (a string) is required");
    if (strcmp(name, "agenthub_agent_log") == 0) {
        const json_t *tail = json_object_get(args, "tail");
        json_int_t n = MCP_LOG_TAIL_DEFAULT;
        if (tail) {
            if (!json_is_integer(tail) || json_integer_value(tail) < 1 ||
                json_integer_value(tail) > MCP_LOG_TAIL_MAX)
                return reply_error(id, MCP_INVALID_PARAMS,
                                   "argument 'tail' must be an integer from 1 to 100000");
            n = json_integer_value(tail);
        }
        rv = server->tools->log(server->tools->arg, session, (uint32_t)n, &text);
    } else {
        const char *type = json_string_value(json_object_get(args, "type"));
        json_t *data = json_object_get(args, "data");
        if (!type || !type[0])
            return reply_error(id, MCP_INVALID_PARAMS, "argument 'type' (a string) is required");
        if (data && !json_is_object(data))
            return reply_error(id, MCP_INVALID_PARAMS, "argument 'data' must be an object");
        data = data ? json_incref(data) : json_object();
        rv = server->tools->emit(server->tools->arg, session, type, data, &text);
        json_decref(data);
    }
    return reply_result(id, tool_result(text, rv != 0));
}

/* Handles one message.  Returns the reply, or NULL when none is due. */
static json_t *handle_message(struct mcp_server *server, const json_t *message)
{
    const json_t *id, *params;
    const char *method;

    id = json_object_get(message, "id");
    method = json_string_value(json_object_get(message, "method"));
    params = json_object_get(message, "params");
    if (!json_is_object(message)) {
        return reply_error(NULL, MCP_INVALID_REQUEST, "Invalid Request: not an object");
    }
    if (!method) {
        /* A response to us (we send no requests), or garbage with an id. */
        if (!json_object_get(message, "result") && !json_object_get(message, "error"))
            return reply_error(id, MCP_INVALID_REQUEST, "Invalid Request: no method");
        return NULL;
    }
    if (!id) { /* a notification: never answered */
        if (strcmp(method, "notifications/initialized") == 0)
            server->initialized = 1;
        return NULL;
    }
    if (!json_is_string(id) && !json_is_integer(id)) {
        return reply_error(NULL, MCP_INVALID_REQUEST, "Invalid Request: bad id");
    }
    if (!json_is_string(json_object_get(message, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(message, "jsonrpc")), "2.0") != 0) {
        return reply_error(id, MCP_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
    }
    if (params && !json_is_object(params) && !json_is_array(params)) {
        return reply_error(id, MCP_INVALID_PARAMS, "params must be an object");
    }
    if (strcmp(method, "initialize") == 0)
        return reply_result(id, initialize_result(server, params));
    if (strcmp(method, "ping") == 0)
        return reply_result(id, json_object());
    if (strcmp(method, "tools/list") == 0)
        return reply_result(id, tools_list());
    if (strcmp(method, "tools/call") == 0)
        return tools_call(server, id, params);
    return reply_error(id, MCP_METHOD_NOT_FOUND, "Method not found");
}

char *mcp_handle_line(struct mcp_server *server, const char *line, size_t len)
{
    json_error_t error;
    json_t *message, *reply;
    size_t i;

    for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'); i++)
        ;
    if (i == len)
        return NULL;
    message = json_loadb(line, len, JSON_REJECT_DUPLICATES, &error);
    if (!message)
        return finish(reply_error(NULL, MCP_PARSE_ERROR, "Parse error"));
    if (!json_is_array(message)) {
        reply = handle_message(server, message);
    } else if (json_array_size(message) == 0) {
        reply = reply_error(NULL, MCP_INVALID_REQUEST, "Invalid Request: empty batch");
    } else {
        /* A JSON-RPC batch (protocol 2025-03-26): one array of replies. */
        json_t *item;
        reply = json_array();
        json_array_foreach(message, i, item)
        {
            json_t *one = handle_message(server, item);
            if (one && reply)
                json_array_append_new(reply, one);
            else
                json_decref(one);
        }
        if (json_array_size(reply) == 0) {
            json_decref(reply);
            reply = NULL;
        }
    }
    json_decref(message);
    return finish(reply);
}

enum mcp_read mcp_read_line(FILE *in, char **buf, size_t *cap, size_t *len)
{
    enum mcp_read result = MCP_READ_LINE;
    size_t n = 0;
    int c = EOF;

    while ((c = getc_unlocked(in)) != EOF && c != '\n') {
        if (result != MCP_READ_LINE)
            continue; /* skipping the rest of a line that cannot be kept */
        if (n == MCP_LINE_MAX) {
            result = MCP_READ_TOO_LONG;
            continue;
        }
        if (n + 1 >= *cap) {
            size_t bigger = *cap ? *cap * 2 : 4096;
            char *grown;
            if (bigger > MCP_LINE_MAX + 1)
                bigger = MCP_LINE_MAX + 1;
            grown = realloc(*buf, bigger);
            if (!grown) {
                result = MCP_READ_NOMEM;
                continue;
            }
            *buf = grown;
            *cap = bigger;
        }
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && n == 0 && result == MCP_READ_LINE)
        return MCP_READ_EOF;
    *len = n;
    if (*buf)
        (*buf)[n] = '\0';
    return result;
}

char *mcp_unread_line_reply(enum mcp_read result)
{
    char message[96];

    if (result == MCP_READ_NOMEM)
        return finish(reply_error(NULL, MCP_INTERNAL_ERROR, "Internal error: out of memory"));
    snprintf(message, sizeof(message), "Invalid Request: a message over %d bytes", MCP_LINE_MAX);
    return finish(reply_error(NULL, MCP_INVALID_REQUEST, message));
}
