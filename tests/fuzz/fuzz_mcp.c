/* libFuzzer target for the MCP server's line handler (src/cli/mcp_proto.c):
 * the input is a session of newline-separated lines handled by one server,
 * so initialize, notifications and tools/call sequences are reachable.
 * Every reply is one line of JSON: a JSON-RPC 2.0 object, or a non-empty
 * array of them for a batch.  The tools are fakes that answer like the real
 * ones (text, or a failure text). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mcp_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fake_log(void *arg, const char *session, uint32_t tail, char **text)
{
    if (!session[0] || tail == 0)
        abort(); /* the handler validates these before a tool runs */
    *text = strdup("{\"seq\":1,\"type\":\"stop\",\"data\":{}}\n");
    return session[0] == 'x' ? -1 : 0;
}

static int fake_emit(void *arg, const char *session, const char *type, json_t *data, char **text)
{
    if (!session[0] || !type[0] || !json_is_object(data))
        abort();
    *text = session[0] == 'x' ? NULL : strdup("appended seq 1");
    return session[0] == 'x' ? -1 : 0;
}

static const struct mcp_tools tools = {fake_log, fake_emit, NULL};

static void check_reply(const json_t *reply)
{
    const json_t *version = json_object_get(reply, "jsonrpc");

    if (!json_is_object(reply) || !json_is_string(version) ||
        strcmp(json_string_value(version), "2.0") != 0 ||
        !json_object_get(reply, "result") == !json_object_get(reply, "error"))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mcp_server server;
    const char *text = (const char *)data, *end = text + size;

    mcp_server_init(&server, &tools);
    while (text < end) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        size_t len = nl ? (size_t)(nl - text) : (size_t)(end - text);
        char *out = mcp_handle_line(&server, text, len);
        if (out) {
            json_t *reply = json_loads(out, 0, NULL);
            size_t i;
            if (!reply || strchr(out, '\n'))
                abort();
            if (json_is_array(reply)) {
                if (json_array_size(reply) == 0)
                    abort();
                for (i = 0; i < json_array_size(reply); i++)
                    check_reply(json_array_get(reply, i));
            } else {
                check_reply(reply);
            }
            json_decref(reply);
            free(out);
        }
        text += len + (nl ? 1 : 0);
    }
    return 0;
}
