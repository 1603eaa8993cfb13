/* grpc_json: the proto3 JSON mapping over protobuf-c descriptors; edge
 * cases and malformed input (the differential test against protobuf's own
 * json_format is tests/e2e/test_json_codec.py). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agenthub/testing/v1/echo.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "grpc/grpc_json.h"

/* Parses JSON as TYPE and prints it back (NULL on refusal, WHY set). */
static char *reprint(const ProtobufCMessageDescriptor *type, const char *json, char *why)
{
    ProtobufCMessage *m = grpc_json_decode(type, json, strlen(json), why, GRPC_JSON_ERR_SIZE);
    char *out;
    size_t len;

    if (m == NULL)
        return NULL;
    out = grpc_json_encode(m, &len, why, GRPC_JSON_ERR_SIZE);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(len, strlen(out));
    protobuf_c_message_free_unpacked(m, NULL);
    return out;
}

static void expect(const ProtobufCMessageDescriptor *type, const char *in, const char *out)
{
    char why[GRPC_JSON_ERR_SIZE];
    char *got = reprint(type, in, why);

    ck_assert_msg(got != NULL, "%s refused: %s", in, why);
    ck_assert_str_eq(got, out);
    free(got);
}

static void refuse(const ProtobufCMessageDescriptor *type, const char *in, const char *reason)
{
    char why[GRPC_JSON_ERR_SIZE];
    char *got = reprint(type, in, why);

    ck_assert_msg(got == NULL, "%s accepted as %s", in, got ? got : "");
    ck_assert_msg(strstr(why, reason) != NULL, "%s: \"%s\" lacks \"%s\"", in, why, reason);
}

#define STATUS  (&compass__v1__agent_session_status__descriptor)
#define EVENTS  (&compass__v1__subscribe_events_response__descriptor)
#define SESSREQ (&compass__v1__sessions_request__descriptor)
#define BLOB    (&compass__v1__upload_session_blob_request__descriptor)
#define ECHO    (&agenthub__testing__v1__echo_request__descriptor)
#define CTRL    (&compass__v1__control_ack__descriptor)

START_TEST(test_names_defaults_and_64_bit_strings)
{
    expect(STATUS, "{}", "{}");
    /* Defaults are left out; the original name is accepted; json names out. */
    expect(STATUS, "{\"session_id\":\"s\",\"state\":0,\"lastSeq\":0,\"provider\":\"\"}",
           "{\"sessionId\":\"s\"}");
    expect(STATUS, "{\"lastSeq\":\"18446744073709551615\"}",
           "{\"lastSeq\":\"18446744073709551615\"}");
    expect(STATUS, "{\"lastSeq\":9007199254740993}", "{\"lastSeq\":\"9007199254740993\"}");
    expect(STATUS, "{\"lastSeq\":1e3}", "{\"lastSeq\":\"1000\"}");
    expect(EVENTS, "{\"atUnixMs\":\"-9223372036854775808\"}",
           "{\"atUnixMs\":\"-9223372036854775808\"}");
    expect(ECHO, "{\"statusCode\":\"-2147483648\",\"responseCount\":4294967295}",
           "{\"statusCode\":-2147483648,\"responseCount\":4294967295}");
}
END_TEST

START_TEST(test_enums_by_name_or_number)
{
    expect(STATUS, "{\"state\":\"AGENT_SESSION_STATE_READY\"}",
           "{\"state\":\"AGENT_SESSION_STATE_READY\"}");
    expect(STATUS, "{\"state\":3}", "{\"state\":\"AGENT_SESSION_STATE_WORKING\"}");
    /* proto3 enums are open: a number without a name stays a number. */
    expect(STATUS, "{\"state\":77}", "{\"state\":77}");
    refuse(STATUS, "{\"state\":\"READY\"}", "field state: unknown value \"READY\"");
    refuse(STATUS, "{\"state\":1.5}", "enum name or number");
    refuse(STATUS, "{\"state\":2147483648}", "out of range");
}
END_TEST

START_TEST(test_bytes_in_either_alphabet)
{
    expect(BLOB, "{\"data\":\"+/+/\"}", "{\"data\":\"+/+/\"}");
    expect(BLOB, "{\"data\":\"-_-_\"}", "{\"data\":\"+/+/\"}");
    expect(BLOB, "{\"data\":\"QQ\"}", "{\"data\":\"QQ==\"}");
    expect(BLOB, "{\"data\":\"QUI=\"}", "{\"data\":\"QUI=\"}");
    expect(BLOB, "{\"data\":\"\"}", "{}");
    refuse(BLOB, "{\"data\":\"Q\"}", "field data: invalid base64");
    refuse(BLOB, "{\"data\":\"a b=\"}", "invalid base64");
    refuse(BLOB, "{\"data\":[1]}", "expected a base64 string");
}
END_TEST

START_TEST(test_oneofs_and_nulls)
{
    /* A set member is written even at its default. */
    expect(SESSREQ, "{\"stop\":{}}", "{\"stop\":{}}");
    expect(SESSREQ, "{\"start\":null,\"stop\":{}}", "{\"stop\":{}}");
    expect(SESSREQ, "{\"start\":null,\"liveSessions\":null,\"requestId\":null}", "{}");
    refuse(SESSREQ, "{\"start\":{},\"error\":{\"code\":1}}",
           "start and error are members of one oneof");
    refuse(SESSREQ, "{\"liveSessions\":[\"a\",null]}", "field liveSessions[1]: null is not");
    refuse(SESSREQ, "{\"liveSessions\":\"a\"}", "expected a list");
    refuse(SESSREQ, "{\"start\":[]}", "expected an object");
}
END_TEST

START_TEST(test_lists_and_nesting)
{
    expect(&compass__v1__get_agent_status_response__descriptor,
           "{\"statuses\":[{},{\"sessionId\":\"a\",\"lastSeq\":\"2\"}]}",
           "{\"statuses\":[{},{\"sessionId\":\"a\",\"lastSeq\":\"2\"}]}");
    expect(CTRL, "{\"appliedAbove\":[1,\"2\",3e0]}", "{\"appliedAbove\":[\"1\",\"2\",\"3\"]}");
    expect(CTRL, "{\"appliedAbove\":[]}", "{}");
    refuse(&compass__v1__get_agent_status_response__descriptor,
           "{\"statuses\":[{\"state\":\"X\"}]}", "field statuses[0].state: unknown value");
}
END_TEST

START_TEST(test_strings_escape_and_stay_utf8)
{
    expect(STATUS, "{\"provider\":\"a\\\"\\\\\\n\\u0001\\u00e9\\ud83d\\ude00/\"}",
           "{\"provider\":\"a\\\"\\\\\\n\\u0001\xc3\xa9\xf0\x9f\x98\x80/\"}");
    refuse(STATUS, "{\"provider\":\"a\\u0000b\"}", "invalid JSON");
    refuse(STATUS, "{\"provider\":\"\xff\"}", "invalid JSON");
}
END_TEST

START_TEST(test_output_refuses_strings_that_are_not_utf8)
{
    Compass__V1__AgentSessionStatus m = COMPASS__V1__AGENT_SESSION_STATUS__INIT;
    char why[GRPC_JSON_ERR_SIZE];
    size_t len;

    m.provider = "\xc3(";
    ck_assert_ptr_null(grpc_json_encode(&m.base, &len, why, sizeof(why)));
    ck_assert_ptr_nonnull(strstr(why, "provider is not valid UTF-8"));
}
END_TEST

START_TEST(test_refuses_unknown_duplicate_and_mistyped_fields)
{
    refuse(STATUS, "{\"sessionIdx\":\"a\"}",
           "unknown field \"sessionIdx\" in message compass.v1.AgentSessionStatus");
    refuse(STATUS, "{\"session_id\":\"a\",\"sessionId\":\"b\"}", "field sessionId: given twice");
    refuse(STATUS, "{\"sessionId\":\"a\",\"sessionId\":\"b\"}", "duplicate object key");
    refuse(STATUS, "{\"sessionId\":1}", "field sessionId: expected a string");
    refuse(STATUS, "{\"lastSeq\":-1}", "out of range for an unsigned 64-bit field");
    refuse(STATUS, "{\"lastSeq\":\"18446744073709551616\"}", "integer out of range");
    refuse(STATUS, "{\"lastSeq\":\"1.5\"}", "expected an integer");
    refuse(STATUS, "{\"lastSeq\":\"\"}", "expected an integer");
    refuse(STATUS, "{\"lastSeq\":\" 1\"}", "expected an integer");
    refuse(STATUS, "{\"lastSeq\":1.5}", "expected an integer");
    refuse(STATUS, "{\"lastSeq\":true}", "expected an integer");
    refuse(ECHO, "{\"statusCode\":2147483648}", "out of range for a 32-bit field");
    refuse(ECHO, "{\"responseCount\":-1}", "unsigned 32-bit");
    refuse(ECHO, "{\"holdOpen\":\"true\"}", "expected true or false");
    refuse(ECHO, "{\"holdOpen\":1}", "expected true or false");
}
END_TEST

START_TEST(test_refuses_malformed_documents)
{
    static const char *const docs[] = {
        "",
        " ",
        "{",
        "}",
        "[]",
        "null",
        "1",
        "\"x\"",
        "{\"a\"}",
        "{\"sessionId\":}",
        "{} {}",
        "{'sessionId':'a'}",
        "{\"sessionId\":\"a\",}",
        "{\"sessionId\":\"a\"",
    };
    char why[GRPC_JSON_ERR_SIZE];

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        ProtobufCMessage *m = grpc_json_decode(STATUS, docs[i], strlen(docs[i]), why, sizeof(why));
        ck_assert_msg(m == NULL, "accepted %s", docs[i]);
        ck_assert_msg(why[0] != '\0', "no reason for %s", docs[i]);
    }
}
END_TEST

START_TEST(test_bounds_nesting_and_size)
{
    size_t n = 200000, i;
    char *doc = malloc(2 * n + 32);
    char why[GRPC_JSON_ERR_SIZE];

    ck_assert_ptr_nonnull(doc);
    /* Deep brackets are refused before the JSON parser recurses. */
    for (i = 0; i < 100; i++)
        doc[i] = '[';
    ck_assert_ptr_null(grpc_json_decode(STATUS, doc, 100, why, sizeof(why)));
    ck_assert_ptr_nonnull(strstr(why, "nested deeper"));
    /* Many small values are refused before they become a large tree. */
    strcpy(doc, "{\"appliedAbove\":[");
    for (i = strlen(doc); i < 2 * n; i += 2)
        memcpy(doc + i, "1,", 2);
    strcpy(doc + i, "1]}");
    ck_assert_ptr_null(grpc_json_decode(CTRL, doc, strlen(doc), why, sizeof(why)));
    ck_assert_ptr_nonnull(strstr(why, "more than"));
    free(doc);
}
END_TEST

START_TEST(test_message_nesting_is_bounded)
{
    /* No type in proto/ nests itself, so a document nested past the
     * message bound fails on the first level its type does not have. */
    char doc[2048] = "", why[GRPC_JSON_ERR_SIZE];
    size_t len = 0;
    int depth = GRPC_JSON_MAX_DEPTH + 2;

    for (int i = 0; i < depth; i++)
        len += (size_t)snprintf(doc + len, sizeof(doc) - len, "{\"originalRequest\":");
    len += (size_t)snprintf(doc + len, sizeof(doc) - len, "{}");
    for (int i = 0; i < depth; i++)
        doc[len++] = '}';
    ck_assert_ptr_null(grpc_json_decode(
        &grpc__reflection__v1__server_reflection_response__descriptor, doc, len, why, sizeof(why)));
    ck_assert_ptr_nonnull(strstr(why, "unknown field \"originalRequest\""));
}
END_TEST

START_TEST(test_field_names_follow_protocs_rule)
{
    ProtobufCFieldDescriptor f = {0};
    char out[16];

    f.name = "fires_at_unix_ms";
    ck_assert_str_eq(grpc_json_field_name(&f, out, sizeof(out)), "firesAtUnixMs");
    f.name = "a__b_";
    ck_assert_str_eq(grpc_json_field_name(&f, out, sizeof(out)), "aB");
    f.name = "a_very_long_field_name";
    ck_assert_ptr_null(grpc_json_field_name(&f, out, sizeof(out)));
}
END_TEST

Suite *grpc_json_suite(void)
{
    Suite *s = suite_create("grpc_json");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_names_defaults_and_64_bit_strings);
    tcase_add_test(tc, test_enums_by_name_or_number);
    tcase_add_test(tc, test_bytes_in_either_alphabet);
    tcase_add_test(tc, test_oneofs_and_nulls);
    tcase_add_test(tc, test_lists_and_nesting);
    tcase_add_test(tc, test_strings_escape_and_stay_utf8);
    tcase_add_test(tc, test_output_refuses_strings_that_are_not_utf8);
    tcase_add_test(tc, test_refuses_unknown_duplicate_and_mistyped_fields);
    tcase_add_test(tc, test_refuses_malformed_documents);
    tcase_add_test(tc, test_bounds_nesting_and_size);
    tcase_add_test(tc, test_message_nesting_is_bounded);
    tcase_add_test(tc, test_field_names_follow_protocs_rule);
    suite_add_tcase(s, tc);
    return s;
}
