/* Unit tests for the Claude hook mapping (src/cli/hook_map.c), including the
 * records it builds passing the server's AgentEventsJsonlV1 codec. */
#include "cli/hook_input.h"
#include "cli/hook_map.h"

#include <check.h>
#include <stdlib.h>

#include "core/jsonl.h"

#define BASE                                                                                       \
    "\"session_id\":\"abc-123\",\"transcript_path\":\"/t/abc.jsonl\",\"cwd\":\"/w\","              \
    "\"permission_mode\":\"default\""

/* TEXT as the shim reads it (caller frees with hook_input_free). */
static void load(const char *text, struct hook_input *in)
{
    hook_input_init(in);
    hook_input_feed(in, text, strlen(text));
    ck_assert_msg(hook_input_end(in) == 0, "bad test JSON: %s", text);
}

/* Maps TEXT; returns the compact dump of the ops array (caller frees). */
static char *map_dump(const char *text, int raw, const char **state)
{
    struct hook_input hook;
    struct hook_plan plan;
    char *out;

    load(text, &hook);
    ck_assert_int_eq(hook_map(&hook, raw, &plan), 0);
    out = json_dumps(plan.ops, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (state)
        *state = plan.state_word;
    hook_plan_free(&plan);
    hook_input_free(&hook);
    return out;
}

static void expect_ops(const char *hook, const char *ops, const char *state)
{
    const char *got_state = NULL;
    char *got = map_dump(hook, 0, &got_state);

    ck_assert_str_eq(got, ops);
    if (state)
        ck_assert_str_eq(got_state, state);
    else
        ck_assert_ptr_null(got_state);
    free(got);
}

#define APPEND(REC)                                                                                \
    "{\"op\":\"append\",\"provider\":\"claude\",\"native_id\":\"abc-123\",\"record\":" REC "}"

START_TEST(session_start_opens_then_emits_source)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"SessionStart\",\"source\":\"resume\"}",
               "[{\"op\":\"open\",\"provider\":\"claude\",\"native_id\":\"abc-123\"}," APPEND(
                   "{\"type\":\"session_start\",\"data\":{\"source\":\"resume\"}}") "]",
               "ready");
}
END_TEST

START_TEST(prompt_carries_length_only)
{
    char *got = map_dump("{" BASE ",\"hook_event_name\":\"UserPromptSubmit\","
                         "\"prompt\":\"secret words \\u00e9\"}",
                         0, NULL);

    ck_assert_str_eq(got, "[" APPEND("{\"type\":\"prompt\",\"data\":{\"length\":14}}") "]");
    ck_assert_ptr_null(strstr(got, "secret"));
    free(got);
}
END_TEST

START_TEST(tools_carry_name_only)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\","
               "\"tool_input\":{\"command\":\"rm -rf /secret\"},\"tool_use_id\":\"t1\"}",
               "[" APPEND("{\"type\":\"tool_start\",\"data\":{\"tool_name\":\"Bash\"}}") "]",
               "working");
    expect_ops("{" BASE ",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\","
               "\"tool_input\":{\"command\":\"x\"},\"tool_response\":{\"stdout\":\"secret\"}}",
               "[" APPEND("{\"type\":\"tool_end\",\"data\":{\"tool_name\":\"Bash\"}}") "]",
               "working");
    expect_ops("{" BASE ",\"hook_event_name\":\"PermissionRequest\",\"tool_name\":\"Write\","
               "\"tool_input\":{\"content\":\"secret\"}}",
               "[" APPEND("{\"type\":\"ask\",\"data\":{\"tool_name\":\"Write\"}}") "]", "blocked");
}
END_TEST

START_TEST(notification_kinds)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"Notification\",\"message\":\"m\","
               "\"notification_type\":\"permission_prompt\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"permission\"}}") "]",
               "blocked");
    expect_ops("{" BASE ",\"hook_event_name\":\"Notification\",\"message\":\"m\","
               "\"notification_type\":\"elicitation_dialog\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"elicitation\"}}") "]",
               "blocked");
    expect_ops("{" BASE ",\"hook_event_name\":\"Notification\",\"message\":\"m\","
               "\"notification_type\":\"idle_prompt\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"idle\"}}") "]", "done");
    expect_ops(
        "{" BASE ",\"hook_event_name\":\"Notification\",\"message\":\"m\","
        "\"notification_type\":\"elicitation_url_dialog\"}",
        "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"elicitation_url\"}}") "]",
        "blocked");
    expect_ops(
        "{" BASE ",\"hook_event_name\":\"Notification\",\"message\":\"m\","
        "\"notification_type\":\"worker_permission_prompt\"}",
        "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"worker_permission\"}}") "]",
        "blocked");
    /* Older Claude Code: no notification_type, the message decides. */
    expect_ops("{" BASE ",\"hook_event_name\":\"Notification\","
               "\"message\":\"Claude needs your permission to use Bash\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"permission\"}}") "]",
               "blocked");
    expect_ops("{" BASE ",\"hook_event_name\":\"Notification\",\"message\":\"m\","
               "\"notification_type\":\"Weird Type!\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"other\"}}") "]", NULL);
}
END_TEST

START_TEST(stop_and_session_end)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"Stop\",\"stop_hook_active\":false}",
               "[" APPEND("{\"type\":\"stop\",\"data\":{}}") "]", "done");
    expect_ops(
        "{" BASE ",\"hook_event_name\":\"SessionEnd\",\"reason\":\"clear\"}",
        "[" APPEND(
            "{\"type\":\"session_end\",\"data\":{\"reason\":\"clear\"}}") ","
                                                                          "{\"op\":\"close\","
                                                                          "\"provider\":\"claude\","
                                                                          "\"native_id\":\"abc-"
                                                                          "123\"}]",
        "stopped");
}
END_TEST

START_TEST(stop_failure_ends_the_turn_with_the_error_kind_only)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"StopFailure\",\"error\":\"rate_limit\","
               "\"error_details\":\"429 secret details\",\"last_assistant_message\":\"secret\"}",
               "[" APPEND("{\"type\":\"stop\",\"data\":{\"error\":\"rate_limit\"}}") "]", "done");
    /* An error that is no plain word is only "other": its text never leaves. */
    expect_ops("{" BASE ",\"hook_event_name\":\"StopFailure\",\"error\":\"Secret: sk-123\"}",
               "[" APPEND("{\"type\":\"stop\",\"data\":{\"error\":\"other\"}}") "]", "done");
    expect_ops("{" BASE ",\"hook_event_name\":\"StopFailure\"}",
               "[" APPEND("{\"type\":\"stop\",\"data\":{}}") "]", "done");
}
END_TEST

START_TEST(a_failed_tool_ends_without_its_error_text)
{
    expect_ops(
        "{" BASE ",\"hook_event_name\":\"PostToolUseFailure\",\"tool_name\":\"Bash\","
        "\"tool_input\":{\"command\":\"cat /secret\"},\"tool_use_id\":\"t1\","
        "\"error\":\"cat: /secret: No such file\",\"is_interrupt\":false}",
        "[" APPEND("{\"type\":\"tool_end\",\"data\":{\"tool_name\":\"Bash\",\"failed\":true}}") "]",
        "working");
}
END_TEST

/* Esc during a tool: Claude Code sends no Stop, so the failure ends the turn. */
START_TEST(an_interrupted_tool_ends_the_turn)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"PostToolUseFailure\",\"tool_name\":\"Bash\","
               "\"tool_input\":{},\"tool_use_id\":\"t1\",\"error\":\"interrupted\","
               "\"is_interrupt\":true}",
               "[" APPEND("{\"type\":\"tool_end\",\"data\":{\"tool_name\":\"Bash\",\"failed\":true,"
                          "\"interrupted\":true}}") "," APPEND("{\"type\":\"stop\",\"data\":{"
                                                               "\"interrupted\":true}}") "]",
               "done");
    /* Only the literal true is an interrupt. */
    expect_ops(
        "{" BASE ",\"hook_event_name\":\"PostToolUseFailure\",\"tool_name\":\"Bash\","
        "\"is_interrupt\":\"true\"}",
        "[" APPEND("{\"type\":\"tool_end\",\"data\":{\"tool_name\":\"Bash\",\"failed\":true}}") "]",
        "working");
}
END_TEST

START_TEST(a_denied_permission_ends_the_tool)
{
    expect_ops(
        "{" BASE ",\"hook_event_name\":\"PermissionDenied\",\"tool_name\":\"Write\","
        "\"tool_input\":{\"content\":\"secret\"},\"tool_use_id\":\"t1\","
        "\"reason\":\"secret reason\"}",
        "[" APPEND(
            "{\"type\":\"tool_end\",\"data\":{\"tool_name\":\"Write\",\"denied\":true}}") "]",
        "working");
}
END_TEST

START_TEST(an_elicitation_waits_and_its_result_goes_on)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"Elicitation\",\"mcp_server_name\":\"forms\","
               "\"message\":\"secret question\",\"mode\":\"form\",\"requested_schema\":{}}",
               "[" APPEND("{\"type\":\"ask\",\"data\":{\"mcp_server_name\":\"forms\"}}") "]",
               "blocked");
    expect_ops("{" BASE ",\"hook_event_name\":\"ElicitationResult\",\"mcp_server_name\":\"forms\","
               "\"action\":\"accept\",\"content\":{\"answer\":\"secret\"}}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"elicitation_result\","
                          "\"mcp_server_name\":\"forms\",\"action\":\"accept\"}}") "]",
               "working");
}
END_TEST

/* A compaction is work; a manual one (/compact) ends with the agent
 * waiting for a prompt, an automatic one inside a turn that goes on. */
START_TEST(a_compaction_works_and_a_manual_one_ends_done)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"PreCompact\",\"trigger\":\"manual\","
               "\"custom_instructions\":\"secret\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"compact\","
                          "\"trigger\":\"manual\"}}") "," APPEND("{\"type\":\"state\",\"data\":{"
                                                                 "\"state\":\"working\"}}") "]",
               "working");
    expect_ops("{" BASE ",\"hook_event_name\":\"PostCompact\",\"trigger\":\"manual\","
               "\"compact_summary\":\"secret\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"compacted\","
                          "\"trigger\":\"manual\"}}") "," APPEND("{\"type\":\"state\",\"data\":{"
                                                                 "\"state\":\"done\"}}") "]",
               "done");
    expect_ops("{" BASE ",\"hook_event_name\":\"PostCompact\",\"trigger\":\"auto\","
               "\"compact_summary\":\"secret\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"compacted\","
                          "\"trigger\":\"auto\"}}") "]",
               NULL);
}
END_TEST

START_TEST(subagents_are_logged_without_a_state)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"SubagentStart\",\"agent_id\":\"a1\","
               "\"agent_type\":\"general-purpose\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"subagent_start\","
                          "\"agent_type\":\"general-purpose\"}}") "]",
               NULL);
    expect_ops("{" BASE ",\"hook_event_name\":\"SubagentStop\",\"stop_hook_active\":false,"
               "\"agent_id\":\"a1\",\"agent_transcript_path\":\"/t\",\"agent_type\":\"Explore\","
               "\"last_assistant_message\":\"secret\"}",
               "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"subagent_stop\","
                          "\"agent_type\":\"Explore\"}}") "]",
               NULL);
}
END_TEST

START_TEST(unknown_events_map_to_nothing)
{
    expect_ops("{" BASE ",\"hook_event_name\":\"ConfigChange\",\"source\":\"skills\"}", "[]", NULL);
    expect_ops("{" BASE ",\"hook_event_name\":\"MessageDisplay\",\"delta\":\"secret\"}", "[]",
               NULL);
    expect_ops("{" BASE ",\"hook_event_name\":\"SomeFutureEvent\"}", "[]", NULL);
    expect_ops("{" BASE ",\"hook_event_name\":7}", "[]", NULL);
    expect_ops("{" BASE "}", "[]", NULL);
}
END_TEST

START_TEST(no_session_id_is_refused)
{
    static const char *const hooks[] = {
        "{\"hook_event_name\":\"Stop\"}",
        "{\"session_id\":\"\",\"hook_event_name\":\"Stop\"}",
        "{\"session_id\":7,\"hook_event_name\":\"Stop\"}",
        "{\"session_id\":\"a\\u0000b\",\"hook_event_name\":\"Stop\"}",
    };
    struct hook_plan plan;
    struct hook_input hook;

    for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
        load(hooks[i], &hook);
        ck_assert_int_eq(hook_map(&hook, 0, &plan), -1);
        hook_input_free(&hook);
    }
}
END_TEST

/* A member too long to keep is left out of its record; the event counts. */
START_TEST(an_overlong_member_is_left_out)
{
    size_t n = HOOK_INPUT_STRING_MAX + 10;
    char *text = malloc(n + 200), *got;

    snprintf(text, n + 200, "{" BASE ",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"%0*d\"}",
             (int)n, 0);
    got = map_dump(text, 0, NULL);
    ck_assert_str_eq(got, "[" APPEND("{\"type\":\"tool_start\",\"data\":{}}") "]");
    free(got);
    snprintf(text, n + 200,
             "{" BASE ",\"hook_event_name\":\"Notification\",\"notification_type\":\"%0*d\"}",
             (int)n, 0);
    got = map_dump(text, 0, NULL);
    ck_assert_str_eq(got,
                     "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"other\"}}") "]");
    free(got);
    snprintf(text, n + 200,
             "{" BASE
             ",\"hook_event_name\":\"Notification\",\"message\":\"needs your permission %0*d\"}",
             (int)n, 0);
    got = map_dump(text, 0, NULL);
    ck_assert_str_eq(
        got, "[" APPEND("{\"type\":\"notification\",\"data\":{\"kind\":\"permission\"}}") "]");
    free(got);
    free(text);
}
END_TEST

START_TEST(provider_raw_only_when_asked_and_bounded)
{
    const char *text = "{" BASE ",\"hook_event_name\":\"Stop\",\"extra\":1}";
    char *plain = map_dump(text, 0, NULL), *raw = map_dump(text, 1, NULL);
    char *big = malloc(HOOK_RAW_MAX + 200), *got, want[128];

    ck_assert_ptr_null(strstr(plain, "provider_raw"));
    ck_assert_ptr_nonnull(strstr(raw, "{\"type\":\"provider_raw\",\"data\":{\"session_id\""));
    ck_assert_ptr_nonnull(strstr(raw, "\"extra\":1"));
    snprintf(big, HOOK_RAW_MAX + 200, "{" BASE ",\"hook_event_name\":\"Stop\",\"pad\":\"%0*d\"}",
             HOOK_RAW_MAX, 0);
    got = map_dump(big, 1, NULL);
    snprintf(want, sizeof(want), "{\"hook_event_name\":\"Stop\",\"truncated\":true,\"bytes\":%zu}",
             strlen(big));
    ck_assert_ptr_nonnull(strstr(got, want));
    free(got);
    /* Valid JSON that jansson cannot hold: the marker too. */
    got = map_dump("{" BASE ",\"hook_event_name\":\"Stop\",\"n\":1e400}", 1, NULL);
    ck_assert_ptr_nonnull(strstr(got, "\"truncated\":true"));
    free(plain);
    free(raw);
    free(big);
    free(got);
}
END_TEST

/* A session_end ends the session's panes: its raw hook goes first. */
START_TEST(provider_raw_comes_before_what_the_event_means)
{
    char *got =
        map_dump("{" BASE ",\"hook_event_name\":\"SessionEnd\",\"reason\":\"other\"}", 1, NULL);
    char *raw = strstr(got, "provider_raw"), *end = strstr(got, "\"session_end\"");

    ck_assert_ptr_nonnull(raw);
    ck_assert_ptr_nonnull(end);
    ck_assert(raw < end);
    free(got);
    got =
        map_dump("{" BASE ",\"hook_event_name\":\"SessionStart\",\"source\":\"startup\"}", 1, NULL);
    ck_assert_ptr_eq(strstr(got, "{\"op\":\"open\""), got + 1);
    ck_assert(strstr(got, "provider_raw") < strstr(got, "\"session_start\""));
    free(got);
}
END_TEST

/* Every record the shim builds passes the server's codec. */
START_TEST(records_pass_the_server_codec)
{
    static const char *const hooks[] = {
        "{" BASE ",\"hook_event_name\":\"SessionStart\",\"source\":\"startup\"}",
        "{" BASE ",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"hi\"}",
        "{" BASE ",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\"}",
        "{" BASE ",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\"}",
        "{" BASE ",\"hook_event_name\":\"PermissionRequest\",\"tool_name\":\"Bash\"}",
        "{" BASE ",\"hook_event_name\":\"Notification\",\"notification_type\":\"idle_prompt\"}",
        "{" BASE ",\"hook_event_name\":\"Stop\"}",
        "{" BASE ",\"hook_event_name\":\"SessionEnd\",\"reason\":\"other\"}",
        "{" BASE ",\"hook_event_name\":\"StopFailure\",\"error\":\"server_error\"}",
        "{" BASE ",\"hook_event_name\":\"PostToolUseFailure\",\"tool_name\":\"B\","
        "\"is_interrupt\":true}",
        "{" BASE ",\"hook_event_name\":\"PermissionDenied\",\"tool_name\":\"B\"}",
        "{" BASE ",\"hook_event_name\":\"Elicitation\",\"mcp_server_name\":\"m\"}",
        "{" BASE ",\"hook_event_name\":\"ElicitationResult\",\"action\":\"decline\"}",
        "{" BASE ",\"hook_event_name\":\"PreCompact\",\"trigger\":\"auto\"}",
        "{" BASE ",\"hook_event_name\":\"PostCompact\",\"trigger\":\"manual\"}",
        "{" BASE ",\"hook_event_name\":\"SubagentStart\",\"agent_type\":\"x\"}",
        "{" BASE ",\"hook_event_name\":\"SubagentStop\",\"agent_type\":\"x\"}",
    };

    for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
        struct hook_input hook;
        struct hook_plan plan;
        size_t k;
        json_t *op;

        load(hooks[i], &hook);
        ck_assert_int_eq(hook_map(&hook, 1, &plan), 0);
        json_array_foreach(plan.ops, k, op)
        {
            json_t *record = json_object_get(op, "record");
            struct jsonl_batch batch;
            char err[JSONL_ERR_SIZE], *line;
            if (!record)
                continue;
            line = json_dumps(record, JSON_COMPACT);
            ck_assert_msg(jsonl_parse_batch(line, strlen(line), &batch, err) == JSONL_OK, "%s: %s",
                          line, err);
            ck_assert_uint_eq(batch.count, 1);
            jsonl_batch_free(&batch);
            free(line);
        }
        hook_plan_free(&plan);
        hook_input_free(&hook);
    }
}
END_TEST

START_TEST(prompt_length_counts_code_points)
{
    static const struct {
        const char *prompt;
        int length;
    } cases[] = {
        {"\"\"", 0},
        {"\"abc\"", 3},
        {"\"h\xc3\xa9llo \xe2\x9c\x93\"", 7},
        {"\"\xf0\x9f\x98\x80\"", 1},
        {"\"\\ud83d\\ude00 \\u00e9\\n\"", 4},
        {"null", 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256], want[64], *got;
        snprintf(text, sizeof(text),
                 "{" BASE ",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":%s}",
                 cases[i].prompt);
        snprintf(want, sizeof(want), "{\"length\":%d}", cases[i].length);
        got = map_dump(text, 0, NULL);
        ck_assert_msg(strstr(got, want), "%s: %s", cases[i].prompt, got);
        free(got);
    }
}
END_TEST

Suite *cli_hook_map_suite(void)
{
    Suite *s = suite_create("cli_hook_map");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, session_start_opens_then_emits_source);
    tcase_add_test(tc, prompt_carries_length_only);
    tcase_add_test(tc, tools_carry_name_only);
    tcase_add_test(tc, notification_kinds);
    tcase_add_test(tc, stop_and_session_end);
    tcase_add_test(tc, stop_failure_ends_the_turn_with_the_error_kind_only);
    tcase_add_test(tc, a_failed_tool_ends_without_its_error_text);
    tcase_add_test(tc, an_interrupted_tool_ends_the_turn);
    tcase_add_test(tc, a_denied_permission_ends_the_tool);
    tcase_add_test(tc, an_elicitation_waits_and_its_result_goes_on);
    tcase_add_test(tc, a_compaction_works_and_a_manual_one_ends_done);
    tcase_add_test(tc, subagents_are_logged_without_a_state);
    tcase_add_test(tc, unknown_events_map_to_nothing);
    tcase_add_test(tc, provider_raw_comes_before_what_the_event_means);
    tcase_add_test(tc, no_session_id_is_refused);
    tcase_add_test(tc, an_overlong_member_is_left_out);
    tcase_add_test(tc, provider_raw_only_when_asked_and_bounded);
    tcase_add_test(tc, records_pass_the_server_codec);
    tcase_add_test(tc, prompt_length_counts_code_points);
    suite_add_tcase(s, tc);
    return s;
}
