/* server_flags: the flag table's engine (bounds, the environment, --help),
 * on a table of its own, and agenthubd's table itself. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server_config.h"
#include "server/server_flags.h"

struct test_config {
    const char *name;
    const char *mode;
    int loud;
    size_t bytes;
    size_t zero_ok;
    uint32_t streams;
    const char *items[3];
    size_t item_count;
};

/* --test-item: at most three, none "bad".  Returns FLAG_OK or FLAG_USAGE. */
static enum flag_rc set_item(void *arg, const char *value, char *why, size_t why_size)
{
    struct test_config *config = arg;

    if (strcmp(value, "bad") == 0 || config->item_count == 3) {
        snprintf(why, why_size, "'%s' is refused", value);
        return FLAG_USAGE;
    }
    config->items[config->item_count++] = value;
    return FLAG_OK;
}

#define AT(field) offsetof(struct test_config, field)

static const struct flag_def table[] = {
    {.name = "test-name",
     .type = FLAG_STRING,
     .arg = "NAME",
     .offset = AT(name),
     .help = "A name."},
    {.name = "test-mode",
     .type = FLAG_CHOICE,
     .arg = "fast|slow|off",
     .offset = AT(mode),
     .choices = "fast|slow|off",
     .def_text = "fast",
     .help = "A mode."},
    {.name = "test-loud", .type = FLAG_BOOL, .offset = AT(loud), .help = "Louder."},
    {.name = "test-bytes",
     .type = FLAG_SIZE,
     .arg = "N",
     .offset = AT(bytes),
     .min = 1,
     .max = FLAG_SIZE_LIMIT,
     .def = 4096,
     .help = "A byte count whose help text is long enough to be wrapped over more than one "
             "line of the help output, at word boundaries, each line indented the same."},
    {.name = "test-zero-ok",
     .type = FLAG_SIZE,
     .arg = "N",
     .offset = AT(zero_ok),
     .min = 0,
     .max = 10,
     .def = 3,
     .help = "Zero allowed."},
    {.name = "test-streams",
     .type = FLAG_U32,
     .arg = "N",
     .offset = AT(streams),
     .min = 1,
     .max = UINT32_MAX,
     .def = 100,
     .help = "A 32-bit count."},
    {.name = "test-item",
     .type = FLAG_SETTER,
     .arg = "ITEM",
     .set = set_item,
     .help = "Repeatable."},
    {.name = "help", .short_name = 'h', .type = FLAG_ACTION, .help = "Help."},
};
#define NROWS (sizeof(table) / sizeof(table[0]))

/* Runs the engine over ARGS (NULL-terminated, copied: getopt permutes) into
 * a defaulted CONFIG.  Returns what flags_parse returned. */
static enum flag_rc parse(struct test_config *config, struct flag_error *err,
                          const struct flag_def **action, const char *const *args)
{
    char *argv[16];
    int argc = 0;

    argv[argc++] = (char *)"prog";
    while (*args && argc < 15)
        argv[argc++] = (char *)*args++;
    argv[argc] = NULL;
    memset(config, 0, sizeof(*config));
    flags_set_defaults(table, NROWS, config);
    return flags_parse(table, NROWS, argc, argv, config, action, err);
}

#define PARSE(config, err, ...)                                                                    \
    parse(config, err, &action, (const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_defaults_fill_numbers_and_leave_the_rest_unset)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    ck_assert_int_eq(parse(&c, &err, &action, (const char *const[]){NULL}), FLAG_OK);
    ck_assert_uint_eq(c.bytes, 4096);
    ck_assert_uint_eq(c.zero_ok, 3);
    ck_assert_uint_eq(c.streams, 100);
    ck_assert_ptr_null(c.name);
    ck_assert_ptr_null(c.mode);
    ck_assert_int_eq(c.loud, 0);
    ck_assert_uint_eq(c.item_count, 0);
}
END_TEST

START_TEST(test_a_u32_takes_its_max_and_refuses_one_more_instead_of_wrapping)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    ck_assert_int_eq(PARSE(&c, &err, "--test-streams", "4294967295"), FLAG_OK);
    ck_assert_uint_eq(c.streams, UINT32_MAX);
    ck_assert_int_eq(PARSE(&c, &err, "--test-streams", "4294967296"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "--test-streams: 4294967296 is out of range (1..4294967295)");
    ck_assert_int_eq(PARSE(&c, &err, "--test-streams=4294967297"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "--test-streams: 4294967297 is out of range (1..4294967295)");
}
END_TEST

START_TEST(test_malformed_negative_and_huge_numbers_name_the_flag_and_range)
{
    static const struct {
        const char *value, *message;
    } cases[] = {
        {"abc", "--test-zero-ok: expected a number in 0..10, got 'abc'"},
        {"12x", "--test-zero-ok: expected a number in 0..10, got '12x'"},
        {" 5", "--test-zero-ok: expected a number in 0..10, got ' 5'"},
        {"", "--test-zero-ok: expected a number in 0..10, got ''"},
        {"-", "--test-zero-ok: expected a number in 0..10, got '-'"},
        {"-1", "--test-zero-ok: -1 is out of range (0..10)"},
        {"11", "--test-zero-ok: 11 is out of range (0..10)"},
        {"99999999999999999999999", "--test-zero-ok: 99999999999999999999999 is out of range "
                                    "(0..10)"},
    };
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(PARSE(&c, &err, "--test-zero-ok", cases[i].value), FLAG_USAGE);
        ck_assert_str_eq(err.message, cases[i].message);
    }
    ck_assert_int_eq(PARSE(&c, &err, "--test-zero-ok", "0"), FLAG_OK);
    ck_assert_uint_eq(c.zero_ok, 0);
    ck_assert_int_eq(PARSE(&c, &err, "--test-zero-ok", "-0"), FLAG_OK);
    ck_assert_int_eq(PARSE(&c, &err, "--test-bytes", "0"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "--test-bytes: 0 is out of range (1..9223372036854775807)");
    ck_assert_int_eq(PARSE(&c, &err, "--test-bytes", "9223372036854775808"), FLAG_USAGE);
    ck_assert_int_eq(PARSE(&c, &err, "--test-bytes", "9223372036854775807"), FLAG_OK);
    ck_assert_uint_eq(c.bytes, (size_t)INT64_MAX);
}
END_TEST

START_TEST(test_the_environment_sets_a_flag_and_the_command_line_wins)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    setenv("AGENTHUB_TEST_STREAMS", "7", 1);
    setenv("AGENTHUB_TEST_NAME", "from-env", 1);
    setenv("AGENTHUB_TEST_LOUD", "1", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-name", "from-argv"), FLAG_OK);
    ck_assert_uint_eq(c.streams, 7);
    ck_assert_str_eq(c.name, "from-argv");
    ck_assert_int_eq(c.loud, 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-streams", "9"), FLAG_OK);
    ck_assert_uint_eq(c.streams, 9);
    ck_assert_str_eq(c.name, "from-env");
    /* An empty variable counts as unset. */
    setenv("AGENTHUB_TEST_STREAMS", "", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-loud"), FLAG_OK);
    ck_assert_uint_eq(c.streams, 100);
    unsetenv("AGENTHUB_TEST_STREAMS");
    unsetenv("AGENTHUB_TEST_NAME");
    unsetenv("AGENTHUB_TEST_LOUD");
}
END_TEST

START_TEST(test_a_bad_variable_is_named_unless_the_command_line_overrides_it)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    setenv("AGENTHUB_TEST_STREAMS", "4294967296", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-loud"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "AGENTHUB_TEST_STREAMS (--test-streams): 4294967296 is out of "
                                  "range (1..4294967295)");
    ck_assert_int_eq(PARSE(&c, &err, "--test-streams", "5"), FLAG_OK);
    ck_assert_uint_eq(c.streams, 5);
    unsetenv("AGENTHUB_TEST_STREAMS");
    setenv("AGENTHUB_TEST_LOUD", "yes", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-name", "x"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "AGENTHUB_TEST_LOUD (--test-loud): expected 0 or 1, got 'yes'");
    setenv("AGENTHUB_TEST_LOUD", "0", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-name", "x"), FLAG_OK);
    ck_assert_int_eq(c.loud, 0);
    unsetenv("AGENTHUB_TEST_LOUD");
    setenv("AGENTHUB_TEST_MODE", "warp", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-name", "x"), FLAG_USAGE);
    ck_assert_str_eq(err.message,
                     "AGENTHUB_TEST_MODE (--test-mode): expected fast, slow or off, got 'warp'");
    unsetenv("AGENTHUB_TEST_MODE");
}
END_TEST

START_TEST(test_a_choice_takes_only_its_values)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    ck_assert_int_eq(PARSE(&c, &err, "--test-mode", "slow"), FLAG_OK);
    ck_assert_str_eq(c.mode, "slow");
    ck_assert_int_eq(PARSE(&c, &err, "--test-mode", "off"), FLAG_OK);
    ck_assert_int_eq(PARSE(&c, &err, "--test-mode", "sl"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "--test-mode: expected fast, slow or off, got 'sl'");
    ck_assert_int_eq(PARSE(&c, &err, "--test-mode", "slower"), FLAG_USAGE);
}
END_TEST

START_TEST(test_a_setter_repeats_and_its_variable_is_a_list_the_command_line_replaces)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    ck_assert_int_eq(PARSE(&c, &err, "--test-item", "a", "--test-item", "b"), FLAG_OK);
    ck_assert_uint_eq(c.item_count, 2);
    ck_assert_str_eq(c.items[1], "b");
    ck_assert_int_eq(PARSE(&c, &err, "--test-item", "bad"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "--test-item: 'bad' is refused");
    setenv("AGENTHUB_TEST_ITEM", "x,y,,z", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-loud"), FLAG_OK);
    ck_assert_uint_eq(c.item_count, 3);
    ck_assert_str_eq(c.items[0], "x");
    ck_assert_str_eq(c.items[2], "z");
    ck_assert_int_eq(PARSE(&c, &err, "--test-item", "only"), FLAG_OK);
    ck_assert_uint_eq(c.item_count, 1);
    ck_assert_str_eq(c.items[0], "only");
    setenv("AGENTHUB_TEST_ITEM", "x,bad", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--test-loud"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "AGENTHUB_TEST_ITEM (--test-item): 'bad' is refused");
    unsetenv("AGENTHUB_TEST_ITEM");
    flags_release_copies();
}
END_TEST

START_TEST(test_actions_unknown_options_and_stray_arguments)
{
    struct test_config c;
    struct flag_error err;
    const struct flag_def *action;

    ck_assert_int_eq(PARSE(&c, &err, "--test-loud", "--help", "--bogus"), FLAG_ACTION_ASKED);
    ck_assert_str_eq(action->name, "help");
    ck_assert_int_eq(PARSE(&c, &err, "-h"), FLAG_ACTION_ASKED);
    ck_assert_str_eq(action->name, "help");
    /* An action does not read the environment: --help works whatever it holds. */
    setenv("AGENTHUB_TEST_STREAMS", "0", 1);
    ck_assert_int_eq(PARSE(&c, &err, "--help"), FLAG_ACTION_ASKED);
    unsetenv("AGENTHUB_TEST_STREAMS");
    ck_assert_int_eq(PARSE(&c, &err, "--bogus"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "unknown or incomplete option '--bogus' (see --help)");
    ck_assert_int_eq(PARSE(&c, &err, "--test-name"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "unknown or incomplete option '--test-name' (see --help)");
    ck_assert_int_eq(PARSE(&c, &err, "--test-loud=1"), FLAG_USAGE);
    ck_assert_int_eq(PARSE(&c, &err, "--test-name", "x", "stray"), FLAG_USAGE);
    ck_assert_str_eq(err.message, "unexpected argument 'stray'");
    /* An unambiguous prefix is the flag, as getopt_long has it. */
    ck_assert_int_eq(PARSE(&c, &err, "--test-str", "8"), FLAG_OK);
    ck_assert_uint_eq(c.streams, 8);
}
END_TEST

START_TEST(test_help_lists_every_row_with_its_range_default_and_variable)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    const char *line;

    ck_assert_ptr_nonnull(out);
    flags_print_help(table, NROWS, out);
    fclose(out);
    ck_assert_ptr_nonnull(strstr(text, "  --test-streams N               (1..4294967295, default "
                                       "100)\n      A 32-bit count.\n"
                                       "      env AGENTHUB_TEST_STREAMS\n"));
    ck_assert_ptr_nonnull(strstr(text, "  --test-mode fast|slow|off      (default fast)\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "  --test-loud\n      Louder.\n      env AGENTHUB_TEST_LOUD\n"));
    ck_assert_ptr_nonnull(strstr(text, "  -h, --help\n      Help.\n"));
    ck_assert_ptr_null(strstr(text, "AGENTHUB_HELP"));
    for (line = text; *line; line = strchr(line, '\n') + 1)
        ck_assert_int_le((int)strcspn(line, "\n"), 79);
    ck_assert_ptr_nonnull(strstr(text, "      A byte count whose help text is long enough to be"));
    free(text);
}
END_TEST

/* Variables the programs and the test harness already read, none of them a
 * flag: no flag may be named like one. */
static const char *const not_flags[] = {
    "AGENTHUB_FAILPOINTS",  "AGENTHUB_BUILD",       "AGENTHUB_ADDR",
    "AGENTHUB_RUNNER_ADDR", "AGENTHUB_TOKEN",       "AGENTHUB_TLS",
    "AGENTHUB_CA",          "AGENTHUB_SPOOL",       "AGENTHUB_SPOOL_MAX_BYTES",
    "AGENTHUB_SESSION_ID",  "AGENTHUB_TERMINAL_ID", "AGENTHUB_EMIT_RAW",
    "AGENTHUB_HOOK_DEBUG",  "AGENTHUB_TEST_PG",     "AGENTHUB_PG_HOST",
    "AGENTHUB_PG_BIN",      "AGENTHUB_TLS_ARGS",    "AGENTHUB_JSON_MESSAGES",
    "AGENTHUB_CLAUDE_SDK",
};

START_TEST(test_agenthubds_table_is_consistent)
{
    size_t count, len = 0;
    const struct flag_def *rows = server_config_flags(&count);
    char a[128], b[128], *text = NULL;
    FILE *out = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(out);
    server_config_usage(out);
    fclose(out);
    for (const char *line = text; *line; line = strchr(line, '\n') + 1)
        ck_assert_msg(strcspn(line, "\n") <= 80, "a --help line over 80 columns: %.100s", line);
    free(text);
    ck_assert_uint_gt(count, 30);
    for (size_t i = 0; i < count; i++) {
        const struct flag_def *row = &rows[i];
        ck_assert_msg(row->help && row->help[0], "--%s has no help", row->name);
        if (row->type == FLAG_SIZE || row->type == FLAG_U32) {
            ck_assert_msg(row->min <= row->max, "--%s", row->name);
            ck_assert_msg(row->max <= (row->type == FLAG_U32 ? UINT32_MAX : FLAG_SIZE_LIMIT),
                          "--%s: its max does not fit its field", row->name);
            ck_assert_msg(row->def_text || (row->def >= row->min && row->def <= row->max),
                          "--%s: its default is out of its range", row->name);
        }
        if (row->type == FLAG_CHOICE)
            ck_assert_ptr_nonnull(row->choices);
        if (row->type == FLAG_SETTER)
            ck_assert_ptr_nonnull(row->set);
        flag_env_name(row, a, sizeof(a));
        for (size_t n = 0; n < sizeof(not_flags) / sizeof(not_flags[0]); n++)
            ck_assert_msg(strcmp(a, not_flags[n]) != 0, "--%s is named like %s", row->name, a);
        for (size_t j = i + 1; j < count; j++) {
            ck_assert_msg(strcmp(row->name, rows[j].name) != 0, "--%s twice", row->name);
            ck_assert_str_ne(a, flag_env_name(&rows[j], b, sizeof(b)));
        }
    }
}
END_TEST

/* server_config_parse over ARGS (NULL-terminated).  Returns its result. */
static enum server_config_rc config_parse(struct server_config *config, const char *const *args)
{
    char *argv[16];
    int argc = 0;

    argv[argc++] = (char *)"agenthubd";
    while (*args && argc < 15)
        argv[argc++] = (char *)*args++;
    argv[argc] = NULL;
    return server_config_parse(argc, argv, config);
}

#define CONFIG_PARSE(config, ...)                                                                  \
    config_parse(config, (const char *const[]){"--db", "x.db", "--listen", "127.0.0.1:0",          \
                                               __VA_ARGS__, NULL})

START_TEST(test_agenthubd_refuses_what_it_used_to_truncate)
{
    struct server_config c;

    ck_assert_int_eq(CONFIG_PARSE(&c, "--max-concurrent-streams", "4294967296"),
                     SERVER_CONFIG_USAGE);
    ck_assert_int_eq(CONFIG_PARSE(&c, "--idle-timeout-ms", "4294967297"), SERVER_CONFIG_USAGE);
    ck_assert_int_eq(CONFIG_PARSE(&c, "--max-connections", "4294967296"), SERVER_CONFIG_USAGE);
    ck_assert_int_eq(CONFIG_PARSE(&c, "--cluster-replicas", "6"), SERVER_CONFIG_USAGE);
    ck_assert_int_eq(
        CONFIG_PARSE(&c, "--max-concurrent-streams", "4294967295", "--idle-timeout-ms", "1"),
        SERVER_CONFIG_RUN);
    ck_assert_uint_eq(c.h2.max_concurrent_streams, UINT32_MAX);
    ck_assert_uint_eq(c.h2.idle_timeout_ms, 1);
    ck_assert_uint_eq(c.h2.max_header_list_bytes, 16384);
    ck_assert_uint_ge(c.h2.max_connections, 1);
    ck_assert_uint_le(c.h2.max_connections, 10000);
}
END_TEST

START_TEST(test_agenthubd_reads_its_variables_and_keeps_its_cross_checks)
{
    struct server_config c;

    setenv("AGENTHUB_MAX_CONNECTIONS", "7", 1);
    setenv("AGENTHUB_CORS_ORIGIN", "https://a.example,http://localhost:5173", 1);
    ck_assert_int_eq(CONFIG_PARSE(&c, "--web", "off"), SERVER_CONFIG_RUN);
    ck_assert_uint_eq(c.h2.max_connections, 7);
    ck_assert_uint_eq(c.cors_origin_count, 2);
    ck_assert_str_eq(c.cors_origins[1], "http://localhost:5173");
    ck_assert_str_eq(c.web, "off");
    unsetenv("AGENTHUB_MAX_CONNECTIONS");
    unsetenv("AGENTHUB_CORS_ORIGIN");
    /* A variable counts as its flag in the checks across flags. */
    setenv("AGENTHUB_CLUSTER", "nats://127.0.0.1:4222", 1);
    ck_assert_int_eq(CONFIG_PARSE(&c, "--log", "memory"), SERVER_CONFIG_USAGE);
    unsetenv("AGENTHUB_CLUSTER");
    setenv("AGENTHUB_TLS_CERT", "cert.pem", 1);
    ck_assert_int_eq(CONFIG_PARSE(&c, "--verbose"), SERVER_CONFIG_USAGE);
    unsetenv("AGENTHUB_TLS_CERT");
    ck_assert_int_eq(
        CONFIG_PARSE(&c, "--agent-log-bytes", "2048", "--session-log-budget-bytes", "1024"),
        SERVER_CONFIG_USAGE);
    ck_assert_int_eq(config_parse(&c, (const char *const[]){"--listen", "127.0.0.1:0", NULL}),
                     SERVER_CONFIG_USAGE);
    flags_release_copies();
}
END_TEST

Suite *server_flags_suite(void)
{
    Suite *suite = suite_create("server_flags");
    TCase *engine = tcase_create("engine");
    TCase *agenthubd = tcase_create("agenthubd");

    tcase_add_test(engine, test_defaults_fill_numbers_and_leave_the_rest_unset);
    tcase_add_test(engine, test_a_u32_takes_its_max_and_refuses_one_more_instead_of_wrapping);
    tcase_add_test(engine, test_malformed_negative_and_huge_numbers_name_the_flag_and_range);
    tcase_add_test(engine, test_the_environment_sets_a_flag_and_the_command_line_wins);
    tcase_add_test(engine, test_a_bad_variable_is_named_unless_the_command_line_overrides_it);
    tcase_add_test(engine, test_a_choice_takes_only_its_values);
    tcase_add_test(engine,
                   test_a_setter_repeats_and_its_variable_is_a_list_the_command_line_replaces);
    tcase_add_test(engine, test_actions_unknown_options_and_stray_arguments);
    tcase_add_test(engine, test_help_lists_every_row_with_its_range_default_and_variable);
    tcase_add_test(agenthubd, test_agenthubds_table_is_consistent);
    tcase_add_test(agenthubd, test_agenthubd_refuses_what_it_used_to_truncate);
    tcase_add_test(agenthubd, test_agenthubd_reads_its_variables_and_keeps_its_cross_checks);
    suite_add_tcase(suite, engine);
    suite_add_tcase(suite, agenthubd);
    return suite;
}
