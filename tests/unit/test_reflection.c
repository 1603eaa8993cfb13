/* Unit tests for the descriptor index behind gRPC reflection: lookups over
 * the embedded FileDescriptorSet, and malformed input failing cleanly. */
#include "rpc/descriptor_index.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char agenthub_descriptor_set[];
extern const size_t agenthub_descriptor_set_len;

static struct descriptor_index *real_index(void)
{
    struct descriptor_index *index =
        descriptor_index_new(agenthub_descriptor_set, agenthub_descriptor_set_len);
    ck_assert_ptr_nonnull(index);
    return index;
}

static const char *symbol_file(const struct descriptor_index *index, const char *symbol,
                               enum descriptor_kind *kind)
{
    long file = descriptor_index_find_symbol(index, symbol, kind);
    return file < 0 ? NULL : descriptor_index_file_name(index, (size_t)file);
}

/* --- A tiny protobuf writer for hand-made sets ---------------------------- */

struct buf {
    uint8_t data[4096];
    size_t len;
};

static void put_varint(struct buf *b, uint64_t v)
{
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        ck_assert_uint_lt(b->len, sizeof(b->data));
        b->data[b->len++] = byte | (v ? 0x80 : 0);
    } while (v);
}

static void put_bytes(struct buf *b, uint32_t field, const void *data, size_t len)
{
    put_varint(b, (uint64_t)field << 3 | 2);
    put_varint(b, len);
    ck_assert_uint_le(b->len + len, sizeof(b->data));
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

static void put_string(struct buf *b, uint32_t field, const char *s)
{
    put_bytes(b, field, s, strlen(s));
}

static void put_message(struct buf *b, uint32_t field, const struct buf *m)
{
    put_bytes(b, field, m->data, m->len);
}

/* A FileDescriptorProto NAME in PACKAGE with one message MESSAGE, importing
 * DEP when it is not NULL. */
static void make_file(struct buf *file, const char *name, const char *package, const char *message,
                      const char *dep)
{
    struct buf msg = {{0}, 0};

    file->len = 0;
    put_string(file, 1, name);
    put_string(file, 2, package);
    if (dep)
        put_string(file, 3, dep);
    put_string(&msg, 1, message);
    put_message(file, 4, &msg);
}

/* Indexes a heap copy of exactly LEN bytes, so ASan sees any overread, then
 * frees the copy: only names and symbols stay usable, not file bytes. */
static struct descriptor_index *index_copy(const uint8_t *data, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    struct descriptor_index *index;

    ck_assert_ptr_nonnull(copy);
    if (len)
        memcpy(copy, data, len);
    index = descriptor_index_new(copy, len);
    /* The index points into COPY; read every file to catch a bad span. */
    if (index) {
        for (size_t i = 0; i < descriptor_index_file_count(index); i++) {
            size_t n;
            const uint8_t *bytes = descriptor_index_file_bytes(index, i, &n);
            ck_assert(bytes >= copy && bytes + n <= copy + len);
            ck_assert_ptr_nonnull(descriptor_index_file_name(index, i));
        }
    }
    free(copy);
    return index;
}

/* --- The embedded set ------------------------------------------------------ */

START_TEST(finds_services_methods_and_messages)
{
    struct descriptor_index *index = real_index();
    enum descriptor_kind kind;

    ck_assert_str_eq(symbol_file(index, "compass.v1.CompassService", &kind),
                     "compass/v1/services.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_SERVICE);
    ck_assert_str_eq(symbol_file(index, "compass.v1.CompassService.SubscribeAgentSession", &kind),
                     "compass/v1/services.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_METHOD);
    ck_assert_str_eq(symbol_file(index, "compass.v1.AgentSessionFrame", &kind),
                     "compass/v1/frames.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_MESSAGE);
    ck_assert_str_eq(symbol_file(index, "compass.v1.AgentSessionState", &kind),
                     "compass/v1/frames.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_ENUM);
    ck_assert_str_eq(symbol_file(index, "grpc.reflection.v1alpha.ServerReflection", &kind),
                     "grpc/reflection/v1alpha/reflection.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_SERVICE);
    /* One leading dot, as in a type_name, is accepted. */
    ck_assert_str_eq(symbol_file(index, ".grpc.health.v1.Health", NULL),
                     "grpc/health/v1/health.proto");
    descriptor_index_free(index);
}
END_TEST

START_TEST(finds_nested_enums_fields_and_values)
{
    struct descriptor_index *index = real_index();
    enum descriptor_kind kind;

    ck_assert_str_eq(symbol_file(index, "grpc.health.v1.HealthCheckResponse.ServingStatus", &kind),
                     "grpc/health/v1/health.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_ENUM);
    ck_assert_str_eq(symbol_file(index, "grpc.health.v1.HealthCheckResponse.SERVING", &kind),
                     "grpc/health/v1/health.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_ENUM_VALUE);
    ck_assert_str_eq(symbol_file(index, "grpc.health.v1.HealthCheckRequest.service", &kind),
                     "grpc/health/v1/health.proto");
    ck_assert_int_eq(kind, DESCRIPTOR_FIELD);
    descriptor_index_free(index);
}
END_TEST

START_TEST(unknown_names_are_not_found)
{
    struct descriptor_index *index = real_index();

    ck_assert_int_eq(descriptor_index_find_symbol(index, "compass.v1.NoSuchThing", NULL), -1);
    ck_assert_int_eq(descriptor_index_find_symbol(index, "compass.v1", NULL), -1);
    ck_assert_int_eq(descriptor_index_find_symbol(index, "", NULL), -1);
    ck_assert_int_eq(descriptor_index_find_symbol(index, "CompassService", NULL), -1);
    ck_assert_int_eq(descriptor_index_find_file(index, "compass/v1/nope.proto"), -1);
    ck_assert_int_eq(descriptor_index_find_file(index, ""), -1);
    descriptor_index_free(index);
}
END_TEST

START_TEST(file_bytes_are_the_file_descriptor_proto)
{
    struct descriptor_index *index = real_index();
    long file = descriptor_index_find_file(index, "grpc/health/v1/health.proto");
    const char *name = "grpc/health/v1/health.proto";
    const uint8_t *bytes;
    size_t len;

    ck_assert_int_ge(file, 0);
    bytes = descriptor_index_file_bytes(index, (size_t)file, &len);
    /* protoc writes name (field 1, length-delimited) first. */
    ck_assert_uint_gt(len, 2 + strlen(name));
    ck_assert_uint_eq(bytes[0], 0x0a);
    ck_assert_uint_eq(bytes[1], strlen(name));
    ck_assert(memcmp(bytes + 2, name, strlen(name)) == 0);
    ck_assert(bytes > agenthub_descriptor_set &&
              bytes + len <= agenthub_descriptor_set + agenthub_descriptor_set_len);
    descriptor_index_free(index);
}
END_TEST

START_TEST(closure_lists_file_first_then_transitive_deps_once)
{
    struct descriptor_index *index = real_index();
    size_t total = descriptor_index_file_count(index);
    size_t *out = calloc(total, sizeof(*out));
    long services = descriptor_index_find_file(index, "compass/v1/services.proto");
    long frames = descriptor_index_find_file(index, "compass/v1/frames.proto");
    size_t n;

    ck_assert_ptr_nonnull(out);
    ck_assert_uint_ge(total, 6);
    ck_assert_int_ge(services, 0);
    ck_assert_int_ge(frames, 0);
    n = descriptor_index_closure(index, (size_t)services, out);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(out[0], (size_t)services);
    ck_assert_uint_eq(out[1], (size_t)frames);
    n = descriptor_index_closure(index, (size_t)frames, out);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(out[0], (size_t)frames);
    free(out);
    descriptor_index_free(index);
}
END_TEST

START_TEST(closure_follows_chains_and_diamonds_once)
{
    /* d imports b and c, both import a: a appears once, d first. */
    struct buf set = {{0}, 0}, file;
    struct descriptor_index *index;
    size_t out[4], n;

    make_file(&file, "a.proto", "p", "A", NULL);
    put_message(&set, 1, &file);
    make_file(&file, "b.proto", "p", "B", "a.proto");
    put_message(&set, 1, &file);
    make_file(&file, "c.proto", "p", "C", "a.proto");
    put_message(&set, 1, &file);
    make_file(&file, "d.proto", "p", "D", "b.proto");
    put_string(&file, 3, "c.proto");
    put_message(&set, 1, &file);
    index = index_copy(set.data, set.len);
    ck_assert_ptr_nonnull(index);
    n = descriptor_index_closure(index, (size_t)descriptor_index_find_file(index, "d.proto"), out);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(descriptor_index_file_name(index, out[0]), "d.proto");
    ck_assert_str_eq(descriptor_index_file_name(index, out[1]), "b.proto");
    ck_assert_str_eq(descriptor_index_file_name(index, out[2]), "c.proto");
    ck_assert_str_eq(descriptor_index_file_name(index, out[3]), "a.proto");
    descriptor_index_free(index);
}
END_TEST

/* --- Malformed input -------------------------------------------------------- */

START_TEST(every_truncation_fails_cleanly_or_drops_whole_files)
{
    struct descriptor_index *full = real_index();
    size_t total = descriptor_index_file_count(full);
    size_t accepted = 0;

    for (size_t len = 0; len < agenthub_descriptor_set_len; len++) {
        struct descriptor_index *index = index_copy(agenthub_descriptor_set, len);
        if (!index)
            continue;
        /* Only a cut between files parses, and it holds fewer files. */
        ck_assert_uint_lt(descriptor_index_file_count(index), total);
        accepted++;
        descriptor_index_free(index);
    }
    ck_assert_uint_ge(accepted, 1); /* at least the empty set */
    descriptor_index_free(full);
}
END_TEST

START_TEST(random_corruption_never_crashes)
{
    uint8_t *copy = malloc(agenthub_descriptor_set_len);
    uint32_t seed = 0x2545f491u;

    ck_assert_ptr_nonnull(copy);
    for (int round = 0; round < 3000; round++) {
        struct descriptor_index *index;
        memcpy(copy, agenthub_descriptor_set, agenthub_descriptor_set_len);
        for (int flips = 1 + round % 4; flips > 0; flips--) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            copy[seed % agenthub_descriptor_set_len] ^= (uint8_t)(1u << (seed >> 8 & 7));
        }
        index = index_copy(copy, agenthub_descriptor_set_len);
        descriptor_index_free(index);
    }
    for (int round = 0; round < 3000; round++) {
        size_t len = (size_t)round % 200;
        for (size_t i = 0; i < len; i++) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            copy[i] = (uint8_t)seed;
        }
        descriptor_index_free(index_copy(copy, len));
    }
    free(copy);
}
END_TEST

START_TEST(empty_set_is_valid)
{
    struct descriptor_index *index = descriptor_index_new(NULL, 0);

    ck_assert_ptr_nonnull(index);
    ck_assert_uint_eq(descriptor_index_file_count(index), 0);
    ck_assert_int_eq(descriptor_index_find_file(index, "a.proto"), -1);
    ck_assert_int_eq(descriptor_index_find_symbol(index, "p.A", NULL), -1);
    descriptor_index_free(index);
}
END_TEST

START_TEST(bad_framing_is_rejected)
{
    static const uint8_t group[] = {0x0b, 0x0c};          /* field 1, start group */
    static const uint8_t field_zero[] = {0x02, 0x00};     /* field 0 */
    static const uint8_t long_len[] = {0x0a, 0x05, 0x0a}; /* length past the end */
    static const uint8_t huge_len[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t long_varint[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80,
                                          0x80, 0x80, 0x80, 0x80, 0x80, 0x01}; /* 11 bytes */
    static const uint8_t file_as_varint[] = {0x08, 0x01}; /* file=1 as a varint */
    static const uint8_t short_fixed64[] = {0x11, 0x00, 0x00};
    static const uint8_t type_six[] = {0x0e};

    ck_assert_ptr_null(index_copy(group, sizeof(group)));
    ck_assert_ptr_null(index_copy(field_zero, sizeof(field_zero)));
    ck_assert_ptr_null(index_copy(long_len, sizeof(long_len)));
    ck_assert_ptr_null(index_copy(huge_len, sizeof(huge_len)));
    ck_assert_ptr_null(index_copy(long_varint, sizeof(long_varint)));
    ck_assert_ptr_null(index_copy(file_as_varint, sizeof(file_as_varint)));
    ck_assert_ptr_null(index_copy(short_fixed64, sizeof(short_fixed64)));
    ck_assert_ptr_null(index_copy(type_six, sizeof(type_six)));
}
END_TEST

START_TEST(bad_files_are_rejected)
{
    struct buf set = {{0}, 0}, file = {{0}, 0};
    static const char nul_name[] = {'a', '\0', 'b'};

    /* No name. */
    put_string(&file, 2, "p");
    put_message(&set, 1, &file);
    ck_assert_ptr_null(index_copy(set.data, set.len));

    /* A NUL inside the name. */
    set.len = file.len = 0;
    put_bytes(&file, 1, nul_name, sizeof(nul_name));
    put_message(&set, 1, &file);
    ck_assert_ptr_null(index_copy(set.data, set.len));

    /* The same file twice. */
    set.len = 0;
    make_file(&file, "a.proto", "p", "A", NULL);
    put_message(&set, 1, &file);
    make_file(&file, "a.proto", "q", "B", NULL);
    put_message(&set, 1, &file);
    ck_assert_ptr_null(index_copy(set.data, set.len));

    /* The same symbol in two files. */
    set.len = 0;
    make_file(&file, "a.proto", "p", "A", NULL);
    put_message(&set, 1, &file);
    make_file(&file, "b.proto", "p", "A", NULL);
    put_message(&set, 1, &file);
    ck_assert_ptr_null(index_copy(set.data, set.len));

    /* A dependency missing from the set. */
    set.len = 0;
    make_file(&file, "b.proto", "p", "B", "a.proto");
    put_message(&set, 1, &file);
    ck_assert_ptr_null(index_copy(set.data, set.len));

    /* A message without a name. */
    set.len = file.len = 0;
    put_string(&file, 1, "a.proto");
    put_bytes(&file, 4, "", 0);
    put_message(&set, 1, &file);
    ck_assert_ptr_null(index_copy(set.data, set.len));
}
END_TEST

/* NESTING levels of message M, each inside the last, in file "n.proto". */
static void make_nested(struct buf *set, int nesting)
{
    struct buf a = {{0}, 0}, b = {{0}, 0}, file = {{0}, 0};

    put_string(&a, 1, "M");
    for (int i = 1; i < nesting; i++) {
        b.len = 0;
        put_string(&b, 1, "M");
        put_message(&b, 3, &a);
        a = b;
    }
    put_string(&file, 1, "n.proto");
    put_message(&file, 4, &a);
    set->len = 0;
    put_message(set, 1, &file);
}

START_TEST(nesting_is_bounded)
{
    struct buf set;
    struct descriptor_index *index;
    char deep[2 * 32 + 1];

    make_nested(&set, 32);
    index = index_copy(set.data, set.len);
    ck_assert_ptr_nonnull(index);
    memset(deep, 0, sizeof(deep));
    for (int i = 0; i < 32; i++)
        strcat(deep, i ? ".M" : "M");
    ck_assert_int_eq(descriptor_index_find_symbol(index, deep, NULL), 0);
    descriptor_index_free(index);

    make_nested(&set, 33);
    ck_assert_ptr_null(index_copy(set.data, set.len));
}
END_TEST

Suite *reflection_suite(void)
{
    Suite *s = suite_create("reflection");
    TCase *tc = tcase_create("descriptor_index");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, finds_services_methods_and_messages);
    tcase_add_test(tc, finds_nested_enums_fields_and_values);
    tcase_add_test(tc, unknown_names_are_not_found);
    tcase_add_test(tc, file_bytes_are_the_file_descriptor_proto);
    tcase_add_test(tc, closure_lists_file_first_then_transitive_deps_once);
    tcase_add_test(tc, closure_follows_chains_and_diamonds_once);
    tcase_add_test(tc, every_truncation_fails_cleanly_or_drops_whole_files);
    tcase_add_test(tc, random_corruption_never_crashes);
    tcase_add_test(tc, empty_set_is_valid);
    tcase_add_test(tc, bad_framing_is_rejected);
    tcase_add_test(tc, bad_files_are_rejected);
    tcase_add_test(tc, nesting_is_bounded);
    suite_add_tcase(s, tc);
    return s;
}
