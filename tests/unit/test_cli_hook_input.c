/* Unit tests for the hook's streaming stdin reader (src/cli/hook_input.c):
 * every event as Claude Code sends it, split at every byte; escapes in kept
 * strings and in the prompt's length; the bounds; malformed input refused;
 * and the kept members against what jansson reads, over many generated
 * inputs fed in random chunks. */
#include "cli/hook_input.h"

#include <check.h>
#include <stdlib.h>

#include "hook_input_oracle.h"

/* Claude Code's JSON for each event (Python's json.dumps layout). */
#define BASE                                                                                       \
    "\"session_id\": \"5f0c2b7e-1d2a-4c1b-9a7e-3b1f2c4d5e6f\", \"transcript_path\": "              \
    "\"/home/u/.claude/projects/p/5f0c2b7e.jsonl\", \"cwd\": \"/work/project\", "                  \
    "\"permission_mode\": \"default\""
static const char *const shapes[] = {
    "{" BASE ", \"hook_event_name\": \"SessionStart\", \"source\": \"startup\"}",
    "{" BASE ", \"hook_event_name\": \"UserPromptSubmit\", \"prompt\": \"please refactor the "
    "s3cr3t-prompt module \\u00e9\\ud83d\\ude00\"}",
    "{" BASE ", \"hook_event_name\": \"PreToolUse\", \"tool_name\": \"Bash\", \"tool_input\": "
    "{\"command\": \"cat /home/u/s3cr3t.txt\", \"description\": \"read\"}, \"tool_use_id\": "
    "\"toolu_01\"}",
    "{" BASE ", \"hook_event_name\": \"PostToolUse\", \"tool_name\": \"Bash\", \"tool_input\": "
    "{\"command\": \"x\"}, \"tool_response\": {\"stdout\": \"s3cr3t\", \"stderr\": \"\", "
    "\"interrupted\": false, \"isImage\": false}, \"tool_use_id\": \"toolu_01\"}",
    "{" BASE ", \"hook_event_name\": \"PermissionRequest\", \"tool_name\": \"Write\", "
    "\"tool_input\": {\"file_path\": \"/x\", \"content\": \"s3cr3t\"}, "
    "\"permission_suggestions\": []}",
    "{" BASE ", \"hook_event_name\": \"Notification\", \"message\": \"Claude needs your "
    "permission to use Bash\", \"notification_type\": \"permission_prompt\"}",
    "{" BASE ", \"hook_event_name\": \"Stop\", \"stop_hook_active\": false}",
    "{" BASE ", \"hook_event_name\": \"SessionEnd\", \"reason\": \"prompt_input_exit\"}",
    "{" BASE ", \"hook_event_name\": \"PostToolUseFailure\", \"tool_name\": \"Bash\", "
    "\"tool_input\": {\"command\": \"sleep 60\"}, \"tool_use_id\": \"toolu_02\", \"error\": "
    "\"Interrupted by user\", \"is_interrupt\": true, \"duration_ms\": 1200}",
    "{" BASE ", \"hook_event_name\": \"ElicitationResult\", \"mcp_server_name\": \"forms\", "
    "\"mode\": \"form\", \"action\": \"accept\", \"content\": {\"answer\": \"s3cr3t\"}}",
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* Feeds TEXT (LEN bytes) in chunks: at SPLIT and then every STEP bytes
 * (STEP 0: one chunk after SPLIT).  Returns hook_input_end's answer. */
static int read_split(struct hook_input *in, const char *text, size_t len, size_t split,
                      size_t step)
{
    size_t at = 0;

    hook_input_init(in);
    if (split > 0) {
        hook_input_feed(in, text, split);
        at = split;
    }
    while (at < len) {
        size_t n = step && step < len - at ? step : len - at;
        hook_input_feed(in, text + at, n);
        at += n;
    }
    return hook_input_end(in);
}

static void assert_same(const struct hook_input *a, const struct hook_input *b)
{
    for (int m = 0; m < HOOK_MEMBERS; m++) {
        const char *x = hook_input_prefix(a, m), *y = hook_input_prefix(b, m);
        ck_assert_int_eq(x == NULL, y == NULL);
        if (x)
            ck_assert_str_eq(x, y);
        ck_assert_int_eq(a->member[m].cut, b->member[m].cut);
    }
    ck_assert_int_eq(a->has_prompt, b->has_prompt);
    ck_assert_uint_eq(a->prompt_length, b->prompt_length);
    ck_assert_int_eq(a->is_interrupt, b->is_interrupt);
}

START_TEST(every_event_split_at_every_byte)
{
    for (size_t s = 0; s < NSHAPES; s++) {
        struct hook_input whole, part;
        size_t len = strlen(shapes[s]);
        const char *why;
        ck_assert_int_eq(read_split(&whole, shapes[s], len, 0, 0), 0);
        why = oracle_check(shapes[s], len, &whole, 1);
        ck_assert_msg(why == NULL, "%s: %s", shapes[s], why);
        ck_assert_str_eq(hook_input_string(&whole, HOOK_SESSION_ID),
                         "5f0c2b7e-1d2a-4c1b-9a7e-3b1f2c4d5e6f");
        for (size_t k = 1; k < len; k++) {
            ck_assert_int_eq(read_split(&part, shapes[s], len, k, 0), 0);
            assert_same(&whole, &part);
            hook_input_free(&part);
        }
        ck_assert_int_eq(read_split(&part, shapes[s], len, 0, 1), 0); /* byte by byte */
        assert_same(&whole, &part);
        hook_input_free(&part);
        hook_input_free(&whole);
    }
}
END_TEST

START_TEST(members_of_each_event)
{
    struct hook_input in;

    ck_assert_int_eq(read_split(&in, shapes[0], strlen(shapes[0]), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_EVENT_NAME), "SessionStart");
    ck_assert_str_eq(hook_input_string(&in, HOOK_SOURCE), "startup");
    ck_assert_ptr_null(hook_input_string(&in, HOOK_TOOL_NAME));
    ck_assert_int_eq(in.has_prompt, 0);
    hook_input_free(&in);
    /* 41 ASCII characters, then é and one astral character as escapes. */
    ck_assert_int_eq(read_split(&in, shapes[1], strlen(shapes[1]), 0, 0), 0);
    ck_assert_int_eq(in.has_prompt, 1);
    ck_assert_uint_eq(in.prompt_length, 41 + 2);
    hook_input_free(&in);
    ck_assert_int_eq(read_split(&in, shapes[3], strlen(shapes[3]), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_EVENT_NAME), "PostToolUse");
    ck_assert_str_eq(hook_input_string(&in, HOOK_TOOL_NAME), "Bash");
    hook_input_free(&in);
    ck_assert_int_eq(read_split(&in, shapes[5], strlen(shapes[5]), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_MESSAGE),
                     "Claude needs your permission to use Bash");
    ck_assert_str_eq(hook_input_string(&in, HOOK_NOTIFICATION_TYPE), "permission_prompt");
    hook_input_free(&in);
    ck_assert_int_eq(read_split(&in, shapes[7], strlen(shapes[7]), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_REASON), "prompt_input_exit");
    ck_assert_int_eq(in.is_interrupt, 0);
    hook_input_free(&in);
    ck_assert_int_eq(read_split(&in, shapes[8], strlen(shapes[8]), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_ERROR), "Interrupted by user");
    ck_assert_int_eq(in.is_interrupt, 1);
    hook_input_free(&in);
    ck_assert_int_eq(read_split(&in, shapes[9], strlen(shapes[9]), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_MCP_SERVER_NAME), "forms");
    ck_assert_str_eq(hook_input_string(&in, HOOK_ACTION), "accept");
    hook_input_free(&in);
}
END_TEST

static int interrupt_of(const char *text)
{
    struct hook_input in;
    int flag;

    ck_assert_msg(read_split(&in, text, strlen(text), 0, 0) == 0, "refused: %s", text);
    flag = in.is_interrupt;
    hook_input_free(&in);
    return flag;
}

/* Only a top-level literal true is an interrupt, and the last one counts. */
START_TEST(is_interrupt_counts_only_when_true)
{
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":true}"), 1);
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":false}"), 0);
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":\"true\"}"), 0);
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":1}"), 0);
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":[true]}"), 0);
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":true,\"is_interrupt\":null}"), 0);
    ck_assert_int_eq(interrupt_of("{\"is_interrupt\":false,\"is_interrupt\":true}"), 1);
    ck_assert_int_eq(interrupt_of("{\"x\":{\"is_interrupt\":true}}"), 0);
    ck_assert_int_eq(interrupt_of("{\"is_\\u0069nterrupt\":true}"), 1);
}
END_TEST

/* Reads TEXT whole; returns the member M (copied into OUT) or "(null)". */
static const char *member_of(const char *text, enum hook_member m, char *out, size_t size)
{
    struct hook_input in;
    const char *v;

    ck_assert_msg(read_split(&in, text, strlen(text), 0, 0) == 0, "refused: %s", text);
    v = hook_input_string(&in, m);
    snprintf(out, size, "%s", v ? v : "(null)");
    hook_input_free(&in);
    return out;
}

static uint64_t prompt_of(const char *text)
{
    struct hook_input in;
    uint64_t n;

    ck_assert_msg(read_split(&in, text, strlen(text), 0, 0) == 0, "refused: %s", text);
    n = in.prompt_length;
    hook_input_free(&in);
    return n;
}

START_TEST(escapes_in_kept_strings_and_in_the_prompt)
{
    char out[256];

    ck_assert_str_eq(member_of("{\"tool_name\":\"a\\u00e9\\u2713\\ud83d\\ude00\\/\\\"\\\\\\n\"}",
                               HOOK_TOOL_NAME, out, sizeof(out)),
                     "a\xc3\xa9\xe2\x9c\x93\xf0\x9f\x98\x80/\"\\\n");
    ck_assert_str_eq(
        member_of("{\"tool_name\":\"\\uD83D\\uDE00 h\xc3\xa9\"}", HOOK_TOOL_NAME, out, sizeof(out)),
        "\xf0\x9f\x98\x80 h\xc3\xa9");
    /* A key spelled with escapes is the same key. */
    ck_assert_str_eq(member_of("{\"\\u0074ool_name\":\"x\"}", HOOK_TOOL_NAME, out, sizeof(out)),
                     "x");
    ck_assert_uint_eq(prompt_of("{\"prompt\":\"\"}"), 0);
    ck_assert_uint_eq(prompt_of("{\"prompt\":\"h\xc3\xa9llo \xe2\x9c\x93\"}"), 7);
    ck_assert_uint_eq(prompt_of("{\"prompt\":\"\xf0\x9f\x98\x80\\ud83d\\ude00\"}"), 2);
    ck_assert_uint_eq(prompt_of("{\"prompt\":\"\\n\\t\\\"\\\\\\/\\u0041\\u0000\"}"), 7);
    ck_assert_uint_eq(prompt_of("{\"prompt\":7}"), 0);
}
END_TEST

START_TEST(last_member_wins_and_only_top_level_counts)
{
    char out[64];

    ck_assert_str_eq(
        member_of("{\"tool_name\":\"a\",\"tool_name\":\"b\"}", HOOK_TOOL_NAME, out, sizeof(out)),
        "b");
    ck_assert_str_eq(
        member_of("{\"tool_name\":\"a\",\"tool_name\":1}", HOOK_TOOL_NAME, out, sizeof(out)),
        "(null)");
    ck_assert_str_eq(member_of("{\"tool_input\":{\"tool_name\":\"deep\"},\"x\":[\"tool_name\"]}",
                               HOOK_TOOL_NAME, out, sizeof(out)),
                     "(null)");
    ck_assert_str_eq(
        member_of("{\"tool_name\":{\"tool_name\":\"deep\"}}", HOOK_TOOL_NAME, out, sizeof(out)),
        "(null)");
    ck_assert_uint_eq(prompt_of("{\"prompt\":\"abc\",\"prompt\":\"de\"}"), 2);
    ck_assert_uint_eq(prompt_of("{\"prompt\":\"abc\",\"prompt\":null}"), 0);
}
END_TEST

/* Numbers of any size and U+0000 are JSON: accepted, though jansson refuses
 * them without options.  A kept member holding U+0000 is cut before it. */
START_TEST(big_numbers_and_nul_are_json)
{
    struct hook_input in;
    const char *text = "{\"session_id\":\"s\",\"tool_input\":{\"n\":123456789012345678901234567890,"
                       "\"r\":1e400,\"s\":-0.5E-3000,\"b\":\"a\\u0000b\"},"
                       "\"tool_name\":\"x\\u0000y\"}";

    ck_assert_int_eq(read_split(&in, text, strlen(text), 0, 0), 0);
    ck_assert_str_eq(hook_input_string(&in, HOOK_SESSION_ID), "s");
    ck_assert_ptr_null(hook_input_string(&in, HOOK_TOOL_NAME));
    ck_assert_str_eq(hook_input_prefix(&in, HOOK_TOOL_NAME), "x");
    ck_assert_ptr_null(oracle_check(text, strlen(text), &in, 1));
    hook_input_free(&in);
}
END_TEST

START_TEST(a_long_member_is_cut_between_characters)
{
    size_t n = HOOK_INPUT_STRING_MAX + 100, len;
    char *text = malloc(n * 4);
    struct hook_input in;

    /* "permission" first, then é (2 bytes) up to past the bound. */
    len = (size_t)sprintf(text, "{\"message\":\"permission");
    while (len < n)
        len += (size_t)sprintf(text + len, "\xc3\xa9");
    len += (size_t)sprintf(text + len, "\",\"tool_name\":\"");
    memset(text + len, 'x', HOOK_INPUT_STRING_MAX + 1);
    len += HOOK_INPUT_STRING_MAX + 1;
    len += (size_t)sprintf(text + len, "\",\"source\":\"");
    memset(text + len, 'y', HOOK_INPUT_STRING_MAX);
    len += HOOK_INPUT_STRING_MAX;
    len += (size_t)sprintf(text + len, "\"}");
    ck_assert_int_eq(read_split(&in, text, len, 0, 4093), 0);
    ck_assert_ptr_null(hook_input_string(&in, HOOK_MESSAGE));
    ck_assert_ptr_nonnull(strstr(hook_input_prefix(&in, HOOK_MESSAGE), "permission"));
    ck_assert_uint_le(strlen(hook_input_prefix(&in, HOOK_MESSAGE)), HOOK_INPUT_STRING_MAX);
    ck_assert_uint_ge(strlen(hook_input_prefix(&in, HOOK_MESSAGE)), HOOK_INPUT_STRING_MAX - 1);
    ck_assert_ptr_null(hook_input_string(&in, HOOK_TOOL_NAME));
    ck_assert_uint_eq(strlen(hook_input_prefix(&in, HOOK_TOOL_NAME)), HOOK_INPUT_STRING_MAX);
    ck_assert_uint_eq(strlen(hook_input_string(&in, HOOK_SOURCE)), HOOK_INPUT_STRING_MAX);
    ck_assert_ptr_null(oracle_check(text, len, &in, 1));
    hook_input_free(&in);
    free(text);
}
END_TEST

/* Nesting as deep as jansson allows and no deeper: 2048 values deep. */
START_TEST(depth_is_bounded_as_jansson_bounds_it)
{
    size_t cap = 3 * HOOK_INPUT_DEPTH_MAX + 64;
    char *text = malloc(cap);

    for (unsigned depth = HOOK_INPUT_DEPTH_MAX - 2; depth <= HOOK_INPUT_DEPTH_MAX + 1; depth++) {
        for (int scalar = 0; scalar < 2; scalar++) {
            struct hook_input in;
            size_t len = 0;
            int ok;
            const char *why;
            /* The object is depth 1; then DEPTH - 1 arrays, maybe a 1. */
            len += (size_t)sprintf(text, "{\"a\":");
            for (unsigned i = 2; i <= depth; i++)
                text[len++] = '[';
            if (scalar)
                text[len++] = '1';
            for (unsigned i = 2; i <= depth; i++)
                text[len++] = ']';
            text[len++] = '}';
            ok = read_split(&in, text, len, 0, 0) == 0;
            ck_assert_int_eq(ok, depth + scalar <= HOOK_INPUT_DEPTH_MAX);
            why = oracle_check(text, len, &in, ok);
            ck_assert_msg(why == NULL, "depth %u: %s", depth, why);
            hook_input_free(&in);
        }
    }
    free(text);
}
END_TEST

START_TEST(malformed_input_is_refused)
{
    static const char *const bad[] = {
        "",
        "   ",
        "[]",
        "\"s\"",
        "1",
        "null",
        "{",
        "{\"a\":1",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":}",
        "{,}",
        "{\"a\":1}}",
        "{\"a\":1} x",
        "{\"a\":1}{}",
        "{\"a\":[1,]}",
        "{\"a\":[1 2]}",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":1e}",
        "{\"a\":+1}",
        "{\"a\":-}",
        "{\"a\":0x1}",
        "{\"a\":tru}",
        "{\"a\":truex}",
        "{\"a\":NaN}",
        "{\"a\":\"\\x\"}",
        "{\"a\":\"\\u12\"}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\ud800\\u0041\"}",
        "{\"a\":\"\\udc00\"}",
        "{\"a\":\"tab\there\"}",
        "{\"a\":\"\xc3\"}",
        "{\"a\":\"\xc0\x80\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":\"\xff\"}",
        "{\"a\":\"unterminated}",
        "\xef\xbb\xbf{}",
        "{'a':1}",
        "{a:1}",
        "{\"a\":1}\x00",
    };
    static const size_t sizes_nul = 1; /* the last one holds a NUL byte */

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct hook_input in;
        size_t len = strlen(bad[i]) + (i == sizeof(bad) / sizeof(bad[0]) - 1 ? sizes_nul : 0);
        const char *why;
        ck_assert_msg(read_split(&in, bad[i], len, 0, 0) != 0, "accepted: %s", bad[i]);
        why = oracle_check(bad[i], len, &in, 0);
        ck_assert_msg(why == NULL, "%s: %s", bad[i], why);
        hook_input_free(&in);
        ck_assert_msg(read_split(&in, bad[i], len, 0, 1) != 0, "accepted bytewise: %s", bad[i]);
        hook_input_free(&in);
    }
}
END_TEST

START_TEST(whitespace_around_and_a_late_failure_sticks)
{
    struct hook_input in;
    const char *text = " \t\r\n{ \"a\" : [ 1 , { } ] }\n\n";

    ck_assert_int_eq(read_split(&in, text, strlen(text), 0, 0), 0);
    hook_input_free(&in);
    hook_input_init(&in);
    ck_assert_int_eq(hook_input_feed(&in, "{}", 2), 0);
    ck_assert_int_eq(hook_input_end(&in), 0);
    ck_assert_int_eq(hook_input_feed(&in, "x", 1), -1);
    ck_assert_int_eq(hook_input_feed(&in, " ", 1), -1);
    ck_assert_int_eq(hook_input_end(&in), -1);
    hook_input_free(&in);
}
END_TEST

START_TEST(raw_is_kept_only_while_small)
{
    size_t len = HOOK_INPUT_RAW_MAX + 10;
    char *text = malloc(len);
    struct hook_input in;
    size_t raw_len;

    memset(text, ' ', len);
    memcpy(text, "{\"a\":1}", 7);
    ck_assert_int_eq(read_split(&in, text, HOOK_INPUT_RAW_MAX, 0, 1000), 0);
    ck_assert_ptr_nonnull(hook_input_raw(&in, &raw_len));
    ck_assert_uint_eq(raw_len, HOOK_INPUT_RAW_MAX);
    hook_input_free(&in);
    ck_assert_int_eq(read_split(&in, text, len, 0, 1000), 0);
    ck_assert_ptr_null(hook_input_raw(&in, &raw_len));
    ck_assert_uint_eq(in.bytes, len);
    hook_input_free(&in);
    free(text);
}
END_TEST

/* A small generator of hook-like JSON, written with random spellings
 * (escapes, whitespace), then sometimes damaged. */
struct gen {
    uint64_t s;
    char *buf;
    size_t len, cap;
};

static uint32_t rnd(struct gen *g)
{
    g->s ^= g->s << 13;
    g->s ^= g->s >> 7;
    g->s ^= g->s << 17;
    return (uint32_t)(g->s >> 11);
}

static void put(struct gen *g, const char *s, size_t n)
{
    if (g->len + n + 1 > g->cap) {
        while (g->len + n + 1 > g->cap)
            g->cap *= 2;
        g->buf = realloc(g->buf, g->cap);
    }
    memcpy(g->buf + g->len, s, n);
    g->len += n;
}

static void puts_(struct gen *g, const char *s)
{
    put(g, s, strlen(s));
}

static void put_ws(struct gen *g)
{
    static const char ws[] = " \t\n\r";

    while (rnd(g) % 4 == 0)
        put(g, &ws[rnd(g) % 4], 1);
}

static void put_escape(struct gen *g, uint32_t cp)
{
    char e[8];

    snprintf(e, sizeof(e), rnd(g) % 2 ? "\\u%04x" : "\\u%04X", cp);
    puts_(g, e);
}

/* One code point CP, spelled at random where JSON allows a choice. */
static void put_char(struct gen *g, uint32_t cp)
{
    static const char shorts[] = "\"\\/\b\f\n\r\t", letters[] = "\"\\/bfnrt";
    const char *s = cp && cp < 0x80 ? strchr(shorts, (int)cp) : NULL;
    char b[4];

    if (cp >= 0x10000 && rnd(g) % 2) {
        put_escape(g, 0xD800 + ((cp - 0x10000) >> 10));
        put_escape(g, 0xDC00 + ((cp - 0x10000) & 0x3FF));
        return;
    }
    if (cp < 0x10000 && (cp < 0x20 || rnd(g) % 5 == 0) && !(s && rnd(g) % 2)) {
        put_escape(g, cp);
        return;
    }
    if (s) {
        b[0] = '\\';
        b[1] = letters[s - shorts];
        put(g, b, 2);
    } else if (cp < 0x80) {
        b[0] = (char)cp;
        put(g, b, 1);
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        put(g, b, 2);
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        put(g, b, 3);
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        put(g, b, 4);
    }
}

static void put_text(struct gen *g, const char *utf8_ascii)
{
    put(g, "\"", 1);
    for (const char *p = utf8_ascii; *p; p++)
        put_char(g, (unsigned char)*p);
    put(g, "\"", 1);
}

static void put_random_string(struct gen *g)
{
    static const uint32_t pool[] = {'a',  'Z',  ' ',  '"',    '\\',   '/',     '\n',     0x01,
                                    0x1F, 0x7F, 0xE9, 0x2713, 0xFFFF, 0x1F600, 0x10FFFF, 0};
    size_t n = rnd(g) % 4 == 0 ? rnd(g) % 200 : rnd(g) % 12;

    put(g, "\"", 1);
    for (size_t i = 0; i < n; i++)
        put_char(g, rnd(g) % 3 ? 'a' + rnd(g) % 26 : pool[rnd(g) % (sizeof(pool) / 4)]);
    put(g, "\"", 1);
}

static void put_value(struct gen *g, int depth)
{
    static const char *const numbers[] = {"0",
                                          "-0",
                                          "7",
                                          "-12",
                                          "3.25",
                                          "1e5",
                                          "1E+2",
                                          "-2.5e-3",
                                          "9223372036854775807",
                                          "9223372036854775808",
                                          "-9223372036854775809",
                                          "123456789012345678901234567890",
                                          "1e400",
                                          "-1e400",
                                          "1e-400",
                                          "0.000001"};
    static const char *const words[] = {"true", "false", "null"};
    uint32_t k = rnd(g) % (depth > 4 ? 3 : 5);

    put_ws(g);
    if (k == 0) {
        put_random_string(g);
    } else if (k == 1) {
        puts_(g, numbers[rnd(g) % (sizeof(numbers) / sizeof(numbers[0]))]);
    } else if (k == 2) {
        puts_(g, words[rnd(g) % 3]);
    } else if (k == 3) {
        size_t n = rnd(g) % 4;
        put(g, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i)
                put(g, ",", 1);
            put_value(g, depth + 1);
        }
        put_ws(g);
        put(g, "]", 1);
    } else {
        size_t n = rnd(g) % 4;
        put(g, "{", 1);
        for (size_t i = 0; i < n; i++) {
            if (i)
                put(g, ",", 1);
            put_ws(g);
            if (rnd(g) % 3)
                put_text(g, oracle_members[rnd(g) % HOOK_MEMBERS]);
            else
                put_random_string(g);
            put_ws(g);
            put(g, ":", 1);
            put_value(g, depth + 1);
        }
        put_ws(g);
        put(g, "}", 1);
    }
    put_ws(g);
}

/* One hook-like object: kept members (sometimes twice, sometimes not
 * strings), a prompt, and other members of any shape. */
static void put_hook(struct gen *g)
{
    static const char *const others[] = {"prompt", "tool_input",   "tool_response",
                                         "cwd",    "is_interrupt", "x"};
    size_t n = rnd(g) % 9;

    put_ws(g);
    put(g, "{", 1);
    for (size_t i = 0; i < n; i++) {
        uint32_t k = rnd(g) % 3;
        if (i)
            put(g, ",", 1);
        put_ws(g);
        if (k == 0)
            put_random_string(g);
        else
            put_text(g, k == 1 ? oracle_members[rnd(g) % HOOK_MEMBERS]
                               : others[rnd(g) % (sizeof(others) / sizeof(others[0]))]);
        put_ws(g);
        put(g, ":", 1);
        put_ws(g);
        if (rnd(g) % 3)
            put_random_string(g);
        else
            put_value(g, 1);
    }
    put_ws(g);
    put(g, "}", 1);
    put_ws(g);
}

/* Damages G's text: a byte dropped, added, changed, or the text cut. */
static void damage(struct gen *g)
{
    static const char bytes[] = "{}[]\":,\\u0e-+. \x01\xff\xc3\xa9\xed\xf0";
    size_t at = g->len ? rnd(g) % g->len : 0;

    switch (rnd(g) % 4) {
    case 0:
        if (g->len) {
            memmove(g->buf + at, g->buf + at + 1, g->len - at - 1);
            g->len--;
        }
        break;
    case 1:
        put(g, " ", 1);
        memmove(g->buf + at + 1, g->buf + at, g->len - at - 1);
        g->buf[at] = bytes[rnd(g) % (sizeof(bytes) - 1)];
        break;
    case 2:
        if (g->len)
            g->buf[at] = bytes[rnd(g) % (sizeof(bytes) - 1)];
        break;
    default:
        g->len = at;
        break;
    }
}

START_TEST(the_kept_members_equal_what_jansson_reads)
{
    struct gen g = {.s = 0x9E3779B97F4A7C15ull, .cap = 1024};
    size_t accepted = 0, total = 20000;

    g.buf = malloc(g.cap);
    for (size_t i = 0; i < total; i++) {
        struct hook_input in;
        size_t at = 0;
        const char *why;
        int ok;
        g.len = 0;
        put_hook(&g);
        if (rnd(&g) % 3 == 0)
            for (uint32_t d = 1 + rnd(&g) % 3; d > 0; d--)
                damage(&g);
        hook_input_init(&in);
        while (at < g.len) {
            size_t n = 1 + rnd(&g) % (rnd(&g) % 2 ? 8 : 200);
            if (n > g.len - at)
                n = g.len - at;
            hook_input_feed(&in, g.buf + at, n);
            at += n;
        }
        ok = hook_input_end(&in) == 0;
        accepted += (size_t)ok;
        why = oracle_check(g.buf, g.len, &in, ok);
        ck_assert_msg(why == NULL, "input %zu: %s: %.*s", i, why, (int)g.len, g.buf);
        hook_input_free(&in);
    }
    /* Both kinds were tried in numbers. */
    ck_assert_uint_gt(accepted, total / 4);
    ck_assert_uint_lt(accepted, total - total / 10);
    free(g.buf);
}
END_TEST

Suite *cli_hook_input_suite(void)
{
    Suite *s = suite_create("cli_hook_input");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_event_split_at_every_byte);
    tcase_add_test(tc, members_of_each_event);
    tcase_add_test(tc, is_interrupt_counts_only_when_true);
    tcase_add_test(tc, escapes_in_kept_strings_and_in_the_prompt);
    tcase_add_test(tc, last_member_wins_and_only_top_level_counts);
    tcase_add_test(tc, big_numbers_and_nul_are_json);
    tcase_add_test(tc, a_long_member_is_cut_between_characters);
    tcase_add_test(tc, depth_is_bounded_as_jansson_bounds_it);
    tcase_add_test(tc, malformed_input_is_refused);
    tcase_add_test(tc, whitespace_around_and_a_late_failure_sticks);
    tcase_add_test(tc, raw_is_kept_only_while_small);
    tcase_add_test(tc, the_kept_members_equal_what_jansson_reads);
    suite_add_tcase(s, tc);
    return s;
}
