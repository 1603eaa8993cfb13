/* Unit tests for the AgentEventsJsonlV1 codec. */
#include "core/jsonl.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum jsonl_result parse(const char *s, struct jsonl_batch *b, char *err)
{
    return jsonl_parse_batch(s, strlen(s), b, err);
}

/* Expects S to be RECORD_INVALID with an error starting with PREFIX. */
static void expect_invalid(const char *s, const char *prefix)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(jsonl_parse_batch(s, strlen(s), &b, err), JSONL_RECORD_INVALID);
    ck_assert_uint_eq(b.count, 0);
    ck_assert_ptr_null(b.records);
    ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "err \"%s\" lacks \"%s\"", err,
                  prefix);
}

START_TEST(every_v1_type_parses_and_round_trips_its_name)
{
    int t;

    for (t = 0; t < JSONL_TYPE_COUNT; t++) {
        char line[128];
        struct jsonl_batch b;
        char err[JSONL_ERR_SIZE];
        snprintf(line, sizeof(line), "{\"type\":\"%s\",\"data\":{\"a\":1}}\n",
                 jsonl_type_name((enum jsonl_type)t));
        ck_assert_int_eq(parse(line, &b, err), JSONL_OK);
        ck_assert_uint_eq(b.count, 1);
        ck_assert_int_eq(b.records[0].type, t);
        ck_assert_str_eq(b.records[0].data_json, "{\"a\":1}");
        jsonl_batch_free(&b);
        ck_assert_int_eq(jsonl_type_from_name(jsonl_type_name((enum jsonl_type)t),
                                              strlen(jsonl_type_name((enum jsonl_type)t))),
                         t);
    }
    ck_assert_ptr_null(jsonl_type_name(JSONL_TYPE_COUNT));
}
END_TEST

START_TEST(unknown_type_is_record_invalid_with_line_number)
{
    expect_invalid("{\"type\":\"prompt\"}\n{\"type\":\"prompt\"}\n{\"type\":\"bogus\"}\n",
                   "line 3: unknown type");
}
END_TEST

START_TEST(absent_data_means_empty_object)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(parse("{\"type\":\"stop\"}", &b, err), JSONL_OK);
    ck_assert_str_eq(b.records[0].data_json, "{}");
    ck_assert_uint_eq(b.records[0].data_len, 2);
    jsonl_batch_free(&b);
}
END_TEST

START_TEST(producer_seq_and_ts_are_ignored)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE], out[256];
    int n;

    ck_assert_int_eq(
        parse("{\"seq\":999,\"ts_ms\":\"junk\",\"type\":\"prompt\",\"data\":{\"len\":12}}", &b,
              err),
        JSONL_OK);
    n = jsonl_render(7, 1700000000000, b.records[0].type, b.records[0].data_json,
                     b.records[0].data_len, out, sizeof(out));
    ck_assert_int_eq(n, (int)strlen(out));
    ck_assert_str_eq(
        out, "{\"seq\":7,\"ts_ms\":1700000000000,\"type\":\"prompt\",\"data\":{\"len\":12}}");
    jsonl_batch_free(&b);
}
END_TEST

START_TEST(data_is_compacted_with_key_order_kept)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(parse("  { \"data\" : { \"z\" : [ 1 , 2 ] , \"a\" : { \"k\" : \"v w\" } } , "
                           "\"type\" : \"tool_end\" }  \n",
                           &b, err),
                     JSONL_OK);
    ck_assert_str_eq(b.records[0].data_json, "{\"z\":[1,2],\"a\":{\"k\":\"v w\"}}");
    jsonl_batch_free(&b);
}
END_TEST

START_TEST(data_not_object_is_invalid)
{
    expect_invalid("{\"type\":\"prompt\",\"data\":[1]}", "line 1: data is not an object");
    expect_invalid("{\"type\":\"prompt\",\"data\":null}", "line 1: data is not an object");
}
END_TEST

START_TEST(malformed_json_is_invalid)
{
    expect_invalid("{\"type\":\"prompt\"", "line 1: ");
    expect_invalid("{\"type\":\"prompt\"}\n{\"type\":", "line 2: ");
    expect_invalid("{\"type\":\"prompt\"} x", "line 1: ");
    expect_invalid("{'type':'prompt'}", "line 1: ");
}
END_TEST

START_TEST(non_object_line_is_invalid)
{
    expect_invalid("[1,2]", "line 1: ");
    expect_invalid("\"prompt\"", "line 1: ");
    expect_invalid("42", "line 1: ");
}
END_TEST

START_TEST(invalid_utf8_is_invalid)
{
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\xff\"}}", "line 1: ");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\xc0\xaf\"}}", "line 1: ");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\xed\xa0\x80\"}}", "line 1: ");
}
END_TEST

START_TEST(valid_utf8_and_escapes_are_kept)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(
        parse("{\"type\":\"prompt\",\"data\":{\"t\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}}", &b, err),
        JSONL_OK);
    ck_assert_str_eq(b.records[0].data_json, "{\"t\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}");
    jsonl_batch_free(&b);
}
END_TEST

START_TEST(duplicate_keys_are_invalid_at_any_depth)
{
    expect_invalid("{\"type\":\"prompt\",\"type\":\"stop\"}", "line 1: ");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"a\":1,\"a\":2}}", "line 1: ");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"x\":{\"a\":1,\"b\":2,\"a\":3}}}", "line 1: ");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"a\":1,\"\\u0061\":2}}", "line 1: ");
}
END_TEST

START_TEST(same_key_in_sibling_objects_is_fine)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(
        parse("{\"type\":\"prompt\",\"data\":{\"a\":{\"a\":1},\"b\":{\"a\":2}}}", &b, err),
        JSONL_OK);
    jsonl_batch_free(&b);
}
END_TEST

START_TEST(empty_line_is_invalid_but_one_trailing_newline_is_fine)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(parse("{\"type\":\"stop\"}\n", &b, err), JSONL_OK);
    ck_assert_uint_eq(b.count, 1);
    jsonl_batch_free(&b);
    expect_invalid("{\"type\":\"stop\"}\n\n", "line 2: empty line");
    expect_invalid("{\"type\":\"stop\"}\n\n{\"type\":\"stop\"}", "line 2: empty line");
    expect_invalid("\n", "line 1: empty line");
    expect_invalid("", "line 1: empty line");
}
END_TEST

START_TEST(line_over_16k_is_invalid)
{
    size_t n = JSONL_MAX_LINE + 1;
    char *s = malloc(n + 1);
    const char *head = "{\"type\":\"prompt\",\"data\":{\"t\":\"";
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    memset(s, 'a', n);
    memcpy(s, head, strlen(head));
    memcpy(s + n - 3, "\"}}", 3);
    s[n] = '\0';
    ck_assert_int_eq(jsonl_parse_batch(s, n, &b, err), JSONL_RECORD_INVALID);
    ck_assert_str_eq(err, "line 1: line over 16384 bytes");
    /* Exactly 16 KiB is accepted. */
    memcpy(s + n - 4, "\"}}", 3);
    ck_assert_int_eq(jsonl_parse_batch(s, n - 1, &b, err), JSONL_OK);
    jsonl_batch_free(&b);
    free(s);
}
END_TEST

START_TEST(call_over_64k_is_overflow)
{
    size_t n = JSONL_MAX_CALL + 1;
    char *s = malloc(n);
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    memset(s, 'x', n);
    ck_assert_int_eq(jsonl_parse_batch(s, n, &b, err), JSONL_OVERFLOW);
    ck_assert_uint_eq(b.count, 0);
    free(s);
}
END_TEST

START_TEST(bad_line_anywhere_yields_no_records)
{
    expect_invalid("{\"type\":\"prompt\"}\n{\"type\":\"stop\"}\n{\"type\":\"stop\"}\n{}\n",
                   "line 4: missing type");
}
END_TEST

START_TEST(unknown_top_level_key_is_invalid)
{
    expect_invalid("{\"type\":\"prompt\",\"extra\":1}", "line 1: unknown key");
}
END_TEST

START_TEST(type_must_be_string)
{
    expect_invalid("{\"type\":3}", "line 1: type is not a string");
}
END_TEST

START_TEST(notification_kind_permission_and_elicitation_block)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];
    const char *in = "{\"type\":\"notification\",\"data\":{\"kind\":\"permission\"}}\n"
                     "{\"type\":\"notification\",\"data\":{\"kind\":\"elicitation\"}}\n"
                     "{\"type\":\"notification\",\"data\":{\"kind\":\"idle_prompt\"}}\n"
                     "{\"type\":\"notification\",\"data\":{\"kind\":7}}\n"
                     "{\"type\":\"ask\",\"data\":{\"kind\":\"permission\"}}\n"
                     "{\"type\":\"state\",\"data\":{\"state\":\"working\"}}\n";

    ck_assert_int_eq(parse(in, &b, err), JSONL_OK);
    ck_assert_uint_eq(b.count, 6);
    ck_assert_int_eq(jsonl_record_blocks(&b.records[0]), 1);
    ck_assert_int_eq(jsonl_record_blocks(&b.records[1]), 1);
    ck_assert_int_eq(jsonl_record_blocks(&b.records[2]), 0);
    ck_assert_str_eq(b.records[2].kind, "idle_prompt");
    ck_assert_int_eq(jsonl_record_blocks(&b.records[3]), 0);
    ck_assert_str_eq(b.records[3].kind, "");
    ck_assert_int_eq(jsonl_record_blocks(&b.records[4]), 0);
    ck_assert_str_eq(b.records[5].state, "working");
    jsonl_batch_free(&b);
}
END_TEST

START_TEST(render_reports_needed_length_when_short)
{
    char out[8];
    int n = jsonl_render(1, 2, JSONL_TYPE_STOP, NULL, 0, out, sizeof(out));

    ck_assert_int_eq(n, (int)strlen("{\"seq\":1,\"ts_ms\":2,\"type\":\"stop\",\"data\":{}}"));
    ck_assert_int_eq(jsonl_render(1, 2, JSONL_TYPE_COUNT, NULL, 0, out, sizeof(out)), -1);
}
END_TEST

START_TEST(nul_escape_in_string_is_kept_escaped)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(parse("{\"type\":\"prompt\",\"data\":{\"t\":\"a\\u0000b\"}}", &b, err),
                     JSONL_OK);
    ck_assert_str_eq(b.records[0].data_json, "{\"t\":\"a\\u0000b\"}");
    jsonl_batch_free(&b);
}
END_TEST

/* Fuzz-style: random bytes and mutated valid lines never crash, and on OK
 * every record renders and reparses to the same data. */
START_TEST(random_bytes_never_crash_and_ok_round_trips)
{
    unsigned seed = 777;
    static const char *seeds[] = {
        "{\"type\":\"prompt\",\"data\":{\"len\":12,\"s\":\"x\\u00e9\"}}\n",
        "{\"seq\":1,\"ts_ms\":2,\"type\":\"tool_start\",\"data\":{\"tool_name\":\"Bash\",\"n\":[1,"
        "2.5e3,true,null]}}",
        "{\"type\":\"notification\",\"data\":{\"kind\":\"permission\"}}\n{\"type\":\"stop\"}\n",
    };
    char buf[512];
    int i;

    for (i = 0; i < 200000; i++) {
        struct jsonl_batch b;
        char err[JSONL_ERR_SIZE];
        size_t n, k;
        if (i % 2 == 0) {
            n = (size_t)rand_r(&seed) % 64;
            for (k = 0; k < n; k++)
                buf[k] = (char)(rand_r(&seed) & 0xff);
        } else {
            const char *s = seeds[(size_t)rand_r(&seed) % 3];
            int muts = 1 + rand_r(&seed) % 3;
            n = strlen(s);
            memcpy(buf, s, n);
            while (muts--) {
                size_t at = (size_t)rand_r(&seed) % n;
                buf[at] = (char)(rand_r(&seed) % 4 == 0 ? rand_r(&seed) & 0xff
                                                        : "{}[]\",:\\ aeu0"[rand_r(&seed) % 14]);
            }
        }
        if (jsonl_parse_batch(buf, n, &b, err) == JSONL_OK) {
            for (k = 0; k < b.count; k++) {
                char line[1024];
                struct jsonl_batch b2;
                int m = jsonl_render(1, 2, b.records[k].type, b.records[k].data_json,
                                     b.records[k].data_len, line, sizeof(line));
                ck_assert_int_gt(m, 0);
                ck_assert_int_lt(m, (int)sizeof(line));
                ck_assert_int_eq(jsonl_parse_batch(line, (size_t)m, &b2, err), JSONL_OK);
                ck_assert_str_eq(b2.records[0].data_json, b.records[k].data_json);
                jsonl_batch_free(&b2);
            }
            jsonl_batch_free(&b);
        } else {
            ck_assert_uint_eq(b.count, 0);
            ck_assert_uint_gt(strlen(err), 0);
        }
    }
}
END_TEST

START_TEST(duplicate_in_big_object_is_invalid)
{
    char line[4096];
    size_t o;
    int i;

    o = (size_t)snprintf(line, sizeof(line), "{\"type\":\"prompt\",\"data\":{");
    for (i = 0; i < 200; i++)
        o += (size_t)snprintf(line + o, sizeof(line) - o, "\"k%d\":%d,", i, i);
    snprintf(line + o, sizeof(line) - o, "\"k%d\":0}}", 150);
    expect_invalid(line, "line 1: invalid JSON: duplicate key");
    /* The same key written with an escape, past the linear-check size. */
    snprintf(line + o, sizeof(line) - o, "\"\\u006b%d\":0}}", 7);
    expect_invalid(line, "line 1: invalid JSON: duplicate key");
    snprintf(line + o, sizeof(line) - o, "\"k%d\":0}}", 200);
    {
        struct jsonl_batch b;
        char err[JSONL_ERR_SIZE];
        ck_assert_int_eq(parse(line, &b, err), JSONL_OK);
        jsonl_batch_free(&b);
    }
}
END_TEST

START_TEST(escaped_keys_and_type_decode_before_comparing)
{
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(
        parse("{\"t\\u0079pe\":\"st\\u006fp\",\"data\":{\"ki\\u006ed\":\"x\\/y\"}}", &b, err),
        JSONL_OK);
    ck_assert_int_eq(b.records[0].type, JSONL_TYPE_STOP);
    ck_assert_str_eq(b.records[0].kind, "x/y");
    ck_assert_str_eq(b.records[0].data_json, "{\"ki\\u006ed\":\"x\\/y\"}");
    jsonl_batch_free(&b);
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"\\u00e9\":1,\"\xc3\xa9\":2}}",
                   "line 1: invalid JSON: duplicate key");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}}",
                   "line 1: invalid JSON: duplicate key");
}
END_TEST

START_TEST(lone_surrogates_and_bad_escapes_are_invalid)
{
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\\ud800\"}}", "line 1: invalid JSON");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\\udc00x\"}}", "line 1: invalid JSON");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\\x\"}}", "line 1: invalid JSON");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"\\u12G4\"}}", "line 1: invalid JSON");
    expect_invalid("{\"type\":\"prompt\",\"data\":{\"t\":\"a\tb\"}}", "line 1: invalid JSON");
}
END_TEST

START_TEST(number_grammar_is_strict)
{
    static const char *bad[] = {"01", "-", "1.", ".5", "1e", "1e+", "+1", "0x1", "NaN", "1.5.2"};
    static const char *good[] = {"0",   "-0",   "12",      "-3.25",
                                 "1e9", "2E-3", "1.5e+10", "123456789012345678901234567890"};
    char line[128];
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(line, sizeof(line), "{\"type\":\"prompt\",\"data\":{\"n\":%s}}", bad[i]);
        expect_invalid(line, "line 1: invalid JSON");
    }
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct jsonl_batch b;
        char err[JSONL_ERR_SIZE], want[64];
        snprintf(line, sizeof(line), "{\"type\":\"prompt\",\"data\":{\"n\":%s}}", good[i]);
        ck_assert_int_eq(parse(line, &b, err), JSONL_OK);
        /* The producer's number text is kept as written. */
        snprintf(want, sizeof(want), "{\"n\":%s}", good[i]);
        ck_assert_str_eq(b.records[0].data_json, want);
        jsonl_batch_free(&b);
    }
}
END_TEST

START_TEST(nesting_over_the_limit_is_invalid)
{
    char line[2048];
    size_t o = 0;
    int i;

    o += (size_t)snprintf(line, sizeof(line), "{\"type\":\"prompt\",\"data\":{\"a\":");
    for (i = 0; i < 300; i++)
        line[o++] = '[';
    for (i = 0; i < 300; i++)
        line[o++] = ']';
    snprintf(line + o, sizeof(line) - o, "}}");
    expect_invalid(line, "line 1: invalid JSON: nesting too deep");
}
END_TEST

/* Differential: on small mutated inputs, the validator accepts exactly what
 * jansson (JSON_REJECT_DUPLICATES) accepts as a JSON object, except numbers
 * jansson cannot represent (it rejects those; JSON allows them). */
START_TEST(validator_agrees_with_jansson_on_mutations)
{
    unsigned seed = 4242;
    static const char *seeds[] = {
        "{\"type\":\"prompt\",\"data\":{\"a\":[1,-2.5e3,true,false,null],\"b\":{\"c\":\"\\u00e9\"}}"
        "}",
        "{\"type\":\"ask\",\"data\":{\"s\":\"h\xc3\xa9\\n\\\"q\\\"\",\"t\":{},\"u\":[]}}",
        "{\"type\":\"stop\", \"seq\":1, \"data\":{\"k\":\"\\ud83d\\ude00\",\"kk\":0}}",
    };
    char buf[256];
    int i, disagreements = 0;

    for (i = 0; i < 200000; i++) {
        const char *s = seeds[(size_t)rand_r(&seed) % 3];
        size_t n = strlen(s);
        int muts = 1 + rand_r(&seed) % 2, ours, theirs;
        struct jsonl_batch b;
        char err[JSONL_ERR_SIZE];
        json_error_t jerr;
        json_t *root;

        memcpy(buf, s, n);
        while (muts--) {
            size_t at = (size_t)rand_r(&seed) % n;
            buf[at] = (char)(rand_r(&seed) % 4 == 0 ? rand_r(&seed) & 0xff
                                                    : "{}[]\",:\\ aeu0.-9Ed"[rand_r(&seed) % 19]);
        }
        ours = jsonl_parse_batch(buf, n, &b, err) == JSONL_OK;
        jsonl_batch_free(&b);
        /* Several lines are not comparable to one jansson parse; and jansson
         * tolerates a raw NUL byte after some tokens, which JSON forbids. */
        if (memchr(buf, '\n', n) != NULL || memchr(buf, '\0', n) != NULL)
            continue;
        root = json_loadb(buf, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        theirs = root != NULL && json_is_object(root);
        if (theirs) {
            /* Our codec also requires the record shape. */
            json_t *t = json_object_get(root, "type"), *d = json_object_get(root, "data");
            const char *k;
            json_t *v;
            theirs = json_is_string(t) &&
                     jsonl_type_from_name(json_string_value(t), json_string_length(t)) >= 0 &&
                     (d == NULL || json_is_object(d));
            json_object_foreach(root, k, v)
            {
                if (strcmp(k, "type") && strcmp(k, "data") && strcmp(k, "seq") &&
                    strcmp(k, "ts_ms"))
                    theirs = 0;
            }
        } else if (root == NULL && strstr(jerr.text, "overflow") != NULL) {
            json_decref(root);
            continue;
        }
        json_decref(root);
        if (ours != theirs) {
            disagreements++;
            for (size_t z = 0; z < n; z++)
                fprintf(stderr, "%02x", (unsigned char)buf[z]);
            fprintf(stderr, " <- disagree (ours %d): %s\n", ours, err);
            ck_assert_msg(0, "disagree");
        }
    }
    ck_assert_int_eq(disagreements, 0);
}
END_TEST

/* A relayed record's parts are checked as the line they would make. */
static enum jsonl_result record(const char *type, const char *data, struct jsonl_record *rec,
                                char *err)
{
    return jsonl_parse_record(type, strlen(type), data, strlen(data), rec, err);
}

START_TEST(record_parts_are_one_object_compacted_like_a_line)
{
    struct jsonl_record rec;
    char err[JSONL_ERR_SIZE];

    ck_assert_int_eq(
        record("notification", " {\"kind\" : \"permission\",\n \"n\": [1, 2]}\n", &rec, err),
        JSONL_OK);
    ck_assert_int_eq(rec.type, JSONL_TYPE_NOTIFICATION);
    ck_assert_str_eq(rec.data_json, "{\"kind\":\"permission\",\"n\":[1,2]}");
    ck_assert_uint_eq(rec.data_len, strlen(rec.data_json));
    ck_assert_str_eq(rec.kind, "permission");
    ck_assert(jsonl_record_blocks(&rec));
    free(rec.data_json);
    ck_assert_int_eq(record("stop", "", &rec, err), JSONL_OK);
    ck_assert_str_eq(rec.data_json, "{}");
    free(rec.data_json);
}
END_TEST

START_TEST(record_data_that_is_not_exactly_one_object_is_invalid)
{
    struct jsonl_record rec;
    char err[JSONL_ERR_SIZE];

    /* A second record smuggled after a newline. */
    ck_assert_int_eq(record("prompt", "{}\n{\"type\":\"stop\",\"data\":{}}", &rec, err),
                     JSONL_RECORD_INVALID);
    ck_assert_str_eq(err, "line 1: trailing bytes after the data object at byte 4");
    /* Members of the line smuggled after the object. */
    ck_assert_int_eq(record("prompt", "{},\"seq\":5", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_int_eq(record("prompt", "{}}", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_int_eq(record("prompt", "[1]", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_str_eq(err, "line 1: data is not an object");
    ck_assert_int_eq(record("prompt", "{\"a\":\"x\ny\"}", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_int_eq(record("prompt", "{\"a\":1,\"a\":2}", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_int_eq(record("prompt", "{\"a\":\"\xff\"}", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_int_eq(record("bogus\n", "{}", &rec, err), JSONL_RECORD_INVALID);
    ck_assert_str_eq(err, "line 1: unknown type \"bogus?\"");
}
END_TEST

START_TEST(record_is_bounded_like_a_line)
{
    struct jsonl_record rec;
    char err[JSONL_ERR_SIZE];
    /* {"type":"stop","data":{"k":"..."}} is exactly JSONL_MAX_LINE bytes. */
    size_t fill = JSONL_MAX_LINE - strlen("{\"type\":\"stop\",\"data\":{\"k\":\"\"}}");
    char *data = malloc(fill + 16);

    ck_assert_ptr_nonnull(data);
    memcpy(data, "{\"k\":\"", 6);
    memset(data + 6, 'x', fill);
    memcpy(data + 6 + fill, "\"}", 3);
    ck_assert_int_eq(record("stop", data, &rec, err), JSONL_OK);
    free(rec.data_json);
    memcpy(data + 6 + fill, "x\"}", 4);
    ck_assert_int_eq(record("stop", data, &rec, err), JSONL_RECORD_INVALID);
    ck_assert_str_eq(err, "line 1: line over 16384 bytes");
    free(data);
}
END_TEST

Suite *jsonl_suite(void)
{
    Suite *s = suite_create("jsonl");
    TCase *tc = tcase_create("codec");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_v1_type_parses_and_round_trips_its_name);
    tcase_add_test(tc, unknown_type_is_record_invalid_with_line_number);
    tcase_add_test(tc, absent_data_means_empty_object);
    tcase_add_test(tc, producer_seq_and_ts_are_ignored);
    tcase_add_test(tc, data_is_compacted_with_key_order_kept);
    tcase_add_test(tc, data_not_object_is_invalid);
    tcase_add_test(tc, malformed_json_is_invalid);
    tcase_add_test(tc, non_object_line_is_invalid);
    tcase_add_test(tc, invalid_utf8_is_invalid);
    tcase_add_test(tc, valid_utf8_and_escapes_are_kept);
    tcase_add_test(tc, duplicate_keys_are_invalid_at_any_depth);
    tcase_add_test(tc, same_key_in_sibling_objects_is_fine);
    tcase_add_test(tc, empty_line_is_invalid_but_one_trailing_newline_is_fine);
    tcase_add_test(tc, line_over_16k_is_invalid);
    tcase_add_test(tc, call_over_64k_is_overflow);
    tcase_add_test(tc, bad_line_anywhere_yields_no_records);
    tcase_add_test(tc, unknown_top_level_key_is_invalid);
    tcase_add_test(tc, type_must_be_string);
    tcase_add_test(tc, notification_kind_permission_and_elicitation_block);
    tcase_add_test(tc, render_reports_needed_length_when_short);
    tcase_add_test(tc, nul_escape_in_string_is_kept_escaped);
    tcase_add_test(tc, random_bytes_never_crash_and_ok_round_trips);
    tcase_add_test(tc, duplicate_in_big_object_is_invalid);
    tcase_add_test(tc, escaped_keys_and_type_decode_before_comparing);
    tcase_add_test(tc, lone_surrogates_and_bad_escapes_are_invalid);
    tcase_add_test(tc, number_grammar_is_strict);
    tcase_add_test(tc, nesting_over_the_limit_is_invalid);
    tcase_add_test(tc, validator_agrees_with_jansson_on_mutations);
    tcase_add_test(tc, record_parts_are_one_object_compacted_like_a_line);
    tcase_add_test(tc, record_data_that_is_not_exactly_one_object_is_invalid);
    tcase_add_test(tc, record_is_bounded_like_a_line);
    suite_add_tcase(s, tc);
    return s;
}
