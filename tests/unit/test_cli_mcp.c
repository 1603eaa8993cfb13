/* Unit tests for the MCP message handling (src/cli/mcp_proto.c) against
 * fake tools. */
#include "cli/mcp_proto.h"

#include <check.h>
#include <stdlib.h>

struct fake {
    int log_calls, emit_calls;
    char session[64], type[64];
    uint32_t tail;
    char data[128];
    int fail;
};

static int fake_log(void *arg, const char *session, uint32_t tail, char **text)
{
    struct fake *f = arg;

    f->log_calls++;
    snprintf(f->session, sizeof(f->session), "%s", session);
    f->tail = tail;
    *text = strdup(f->fail ? "NOT_FOUND: no such session" : "{\"seq\":1}\n");
    return f->fail ? -1 : 0;
}

static int fake_emit(void *arg, const char *session, const char *type, json_t *data, char **text)
{
    struct fake *f = arg;
    char *dumped = json_dumps(data, JSON_COMPACT);

    f->emit_calls++;
    snprintf(f->session, sizeof(f->session), "%s", session);
    snprintf(f->type, sizeof(f->type), "%s", type);
    snprintf(f->data, sizeof(f->data), "%s", dumped);
    free(dumped);
    *text = strdup("appended seq 9");
    return 0;
}

static struct fake fake;
static struct mcp_tools tools = {fake_log, fake_emit, &fake};
static struct mcp_server server;

static void setup(void)
{
    memset(&fake, 0, sizeof(fake));
    mcp_server_init(&server, &tools);
}

/* Handles LINE; returns the parsed reply (NULL when none). */
static json_t *handle(const char *line)
{
    char *out = mcp_handle_line(&server, line, strlen(line));
    json_t *reply;

    if (!out)
        return NULL;
    ck_assert_ptr_null(strchr(out, '\n'));
    reply = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(reply);
    free(out);
    ck_assert_str_eq(json_string_value(json_object_get(reply, "jsonrpc")), "2.0");
    return reply;
}

static int error_code(json_t *reply)
{
    return (int)json_integer_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static const char *negotiate(const char *version)
{
    char line[256];
    json_t *reply;
    static char chosen[32];

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
             "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\"}}}",
             version);
    reply = handle(line);
    snprintf(
        chosen, sizeof(chosen), "%s",
        json_string_value(json_object_get(json_object_get(reply, "result"), "protocolVersion")));
    json_decref(reply);
    return chosen;
}

START_TEST(initialize_negotiates_the_version)
{
    ck_assert_str_eq(negotiate("2025-11-25"), "2025-11-25");
    ck_assert_str_eq(negotiate("2025-06-18"), "2025-06-18");
    ck_assert_str_eq(negotiate("2025-03-26"), "2025-03-26");
    ck_assert_str_eq(negotiate("2024-11-05"), "2024-11-05");
    ck_assert_str_eq(negotiate("1999-01-01"), "2025-11-25");
    ck_assert_str_eq(server.protocol, "2025-11-25");
}
END_TEST

START_TEST(notifications_get_no_reply)
{
    ck_assert_ptr_null(handle("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    ck_assert_int_eq(server.initialized, 1);
    ck_assert_ptr_null(handle("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}"));
    ck_assert_ptr_null(handle("   "));
    ck_assert_ptr_null(handle(""));
    /* A response from the client is not answered either. */
    ck_assert_ptr_null(handle("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"));
}
END_TEST

START_TEST(ping_and_ids_echo)
{
    json_t *reply = handle("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}");

    ck_assert_str_eq(json_string_value(json_object_get(reply, "id")), "abc");
    ck_assert_int_eq(json_object_size(json_object_get(reply, "result")), 0);
    json_decref(reply);
}
END_TEST

START_TEST(error_codes)
{
    json_t *reply = handle("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
    ck_assert_int_eq(error_code(reply), -32700);
    ck_assert_ptr_null(json_object_get(reply, "id")); /* nothing to echo: no id member */
    json_decref(reply);
    reply = handle("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\"}");
    ck_assert_int_eq(error_code(reply), -32601);
    ck_assert_int_eq(json_integer_value(json_object_get(reply, "id")), 2);
    json_decref(reply);
    reply = handle("[]");
    ck_assert_int_eq(error_code(reply), -32600);
    json_decref(reply);
    reply = handle("{\"id\":3,\"method\":\"ping\"}");
    ck_assert_int_eq(error_code(reply), -32600);
    json_decref(reply);
    reply = handle("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"nope\",\"arguments\":{}}}");
    ck_assert_int_eq(error_code(reply), -32602);
    json_decref(reply);
    ck_assert_int_eq(fake.log_calls + fake.emit_calls, 0);
}
END_TEST

START_TEST(batches_answer_with_an_array)
{
    const char *line = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
                       "7,{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]";
    char *out = mcp_handle_line(&server, line, strlen(line));
    json_t *reply = json_loads(out, 0, NULL);

    ck_assert(json_is_array(reply));
    ck_assert_uint_eq(json_array_size(reply), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(reply, 0), "id")), 1);
    ck_assert_int_eq(error_code(json_array_get(reply, 1)), -32600);
    ck_assert_int_eq(error_code(json_array_get(reply, 2)), -32601);
    ck_assert_int_eq(server.initialized, 1);
    json_decref(reply);
    free(out);
    line = "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]";
    ck_assert_ptr_null(mcp_handle_line(&server, line, strlen(line)));
}
END_TEST

START_TEST(tools_list_names_both_tools)
{
    json_t *reply = handle("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    json_t *list = json_object_get(json_object_get(reply, "result"), "tools");

    ck_assert_uint_eq(json_array_size(list), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "name")),
                     "agenthub_agent_log");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "name")),
                     "agenthub_agent_emit");
    json_decref(reply);
}
END_TEST

static json_t *call(const char *name, const char *arguments)
{
    char line[512];

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
             "{\"name\":\"%s\",\"arguments\":%s}}",
             name, arguments);
    return handle(line);
}

START_TEST(log_tool_arguments)
{
    json_t *reply = call("agenthub_agent_log", "{\"session\":\"claude:x\",\"tail\":5}");
    json_t *result = json_object_get(reply, "result");

    ck_assert_int_eq(fake.log_calls, 1);
    ck_assert_str_eq(fake.session, "claude:x");
    ck_assert_uint_eq(fake.tail, 5);
    ck_assert(json_is_false(json_object_get(result, "isError")));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(result, "content"), 0), "text")),
                     "{\"seq\":1}\n");
    json_decref(reply);
    reply = call("agenthub_agent_log", "{\"session\":\"s\"}");
    ck_assert_uint_eq(fake.tail, 50);
    json_decref(reply);
    static const char *const bad[] = {"{}",
                                      "{\"session\":3}",
                                      "{\"session\":\"\"}",
                                      "{\"session\":\"s\",\"tail\":0}",
                                      "{\"session\":\"s\",\"tail\":\"1\"}",
                                      "{\"session\":\"s\",\"tail\":1.5}",
                                      "[1]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        reply = call("agenthub_agent_log", bad[i]);
        ck_assert_msg(error_code(reply) == -32602, "%s", bad[i]);
        json_decref(reply);
    }
    ck_assert_int_eq(fake.log_calls, 2);
}
END_TEST

START_TEST(emit_tool_arguments)
{
    json_t *reply = call("agenthub_agent_emit", "{\"session\":\"s1\",\"type\":\"stop\"}");

    ck_assert_int_eq(fake.emit_calls, 1);
    ck_assert_str_eq(fake.type, "stop");
    ck_assert_str_eq(fake.data, "{}");
    json_decref(reply);
    reply = call("agenthub_agent_emit",
                 "{\"session\":\"s1\",\"type\":\"prompt\",\"data\":{\"length\":4}}");
    ck_assert_str_eq(fake.data, "{\"length\":4}");
    json_decref(reply);
    reply = call("agenthub_agent_emit", "{\"session\":\"s1\"}");
    ck_assert_int_eq(error_code(reply), -32602);
    json_decref(reply);
    reply = call("agenthub_agent_emit", "{\"session\":\"s1\",\"type\":\"stop\",\"data\":\"x\"}");
    ck_assert_int_eq(error_code(reply), -32602);
    json_decref(reply);
    ck_assert_int_eq(fake.emit_calls, 2);
}
END_TEST

START_TEST(tool_failure_is_is_error)
{
    json_t *reply, *result;

    fake.fail = 1;
    reply = call("agenthub_agent_log", "{\"session\":\"s\"}");
    result = json_object_get(reply, "result");
    ck_assert_ptr_null(json_object_get(reply, "error"));
    ck_assert(json_is_true(json_object_get(result, "isError")));
    json_decref(reply);
}
END_TEST

START_TEST(an_overlong_line_is_answered_and_the_next_one_is_read)
{
    size_t big = MCP_LINE_MAX + 10, len = 0, cap = 0;
    char *input = malloc(big + 64), *line = NULL, *reply;
    FILE *in;
    json_t *r;

    ck_assert_ptr_nonnull(input);
    memset(input, ' ', big);
    memcpy(input + big, "\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\nlast", 47);
    in = fmemopen(input, big + 46, "r");
    ck_assert_ptr_nonnull(in);
    ck_assert_int_eq(mcp_read_line(in, &line, &cap, &len), MCP_READ_TOO_LONG);
    ck_assert_uint_le(cap, MCP_LINE_MAX + 1);
    reply = mcp_unread_line_reply(MCP_READ_TOO_LONG);
    r = json_loads(reply, 0, NULL);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_null(json_object_get(r, "id")); /* no id to echo: none in the reply */
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
                     MCP_INVALID_REQUEST);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
                     "Invalid Request: a message over 1048576 bytes");
    json_decref(r);
    free(reply);
    ck_assert_int_eq(mcp_read_line(in, &line, &cap, &len), MCP_READ_LINE);
    ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    ck_assert_uint_eq(len, strlen(line));
    /* A last line without a newline still counts; then the end. */
    ck_assert_int_eq(mcp_read_line(in, &line, &cap, &len), MCP_READ_LINE);
    ck_assert_str_eq(line, "last");
    ck_assert_int_eq(mcp_read_line(in, &line, &cap, &len), MCP_READ_EOF);
    fclose(in);
    free(line);
    free(input);
}
END_TEST

START_TEST(a_line_of_exactly_the_limit_is_kept)
{
    size_t len = 0, cap = 0;
    char *input = malloc(MCP_LINE_MAX + 1), *line = NULL;
    FILE *in;

    ck_assert_ptr_nonnull(input);
    memset(input, 'x', MCP_LINE_MAX);
    input[MCP_LINE_MAX] = '\n';
    in = fmemopen(input, MCP_LINE_MAX + 1, "r");
    ck_assert_int_eq(mcp_read_line(in, &line, &cap, &len), MCP_READ_LINE);
    ck_assert_uint_eq(len, MCP_LINE_MAX);
    ck_assert_int_eq(mcp_read_line(in, &line, &cap, &len), MCP_READ_EOF);
    fclose(in);
    free(line);
    free(input);
}
END_TEST

Suite *cli_mcp_suite(void)
{
    Suite *s = suite_create("cli_mcp");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, initialize_negotiates_the_version);
    tcase_add_test(tc, notifications_get_no_reply);
    tcase_add_test(tc, ping_and_ids_echo);
    tcase_add_test(tc, error_codes);
    tcase_add_test(tc, batches_answer_with_an_array);
    tcase_add_test(tc, tools_list_names_both_tools);
    tcase_add_test(tc, log_tool_arguments);
    tcase_add_test(tc, emit_tool_arguments);
    tcase_add_test(tc, tool_failure_is_is_error);
    tcase_add_test(tc, an_overlong_line_is_answered_and_the_next_one_is_read);
    tcase_add_test(tc, a_line_of_exactly_the_limit_is_kept);
    suite_add_tcase(s, tc);
    return s;
}
