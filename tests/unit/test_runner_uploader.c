/* Unit tests for the Runner's blob uploader and resume rules (seed 003),
 * against a test double of UploadSessionBlob / FetchSessionBlob. */
#include "runner/uploader.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define OK                  0
#define NOT_FOUND           5
#define FAILED_PRECONDITION 9
#define UNIMPLEMENTED       12
#define UNAVAILABLE         14

/* "PNGDATA" in base64. */
#define IMG_B64 "UE5HREFUQQ=="
#define IMG_RAW "PNGDATA"

struct double_blobs {
    int statuses[8]; /* answer of the Nth call (after the last: OK) */
    int calls;
    char last_session[64];
    char last_type[64];
    uint8_t last_data[64];
    size_t last_len;
    char last_ref[64];
};

static int next_status(struct double_blobs *d)
{
    int i = d->calls++;

    return i < 8 ? d->statuses[i] : OK;
}

static int fake_upload(void *ctx, const char *session_id, const char *content_type,
                       const uint8_t *data, size_t len, char *ref, size_t ref_size)
{
    struct double_blobs *d = ctx;
    int status = next_status(d);

    snprintf(d->last_session, sizeof(d->last_session), "%s", session_id);
    snprintf(d->last_type, sizeof(d->last_type), "%s", content_type);
    d->last_len = len < sizeof(d->last_data) ? len : sizeof(d->last_data);
    memcpy(d->last_data, data, d->last_len);
    if (status == OK)
        snprintf(ref, ref_size, "ref-%d", d->calls);
    return status;
}

static int fake_fetch(void *ctx, const char *session_id, const char *ref, char **content_type,
                      uint8_t **data, size_t *len)
{
    struct double_blobs *d = ctx;
    int status = next_status(d);

    snprintf(d->last_session, sizeof(d->last_session), "%s", session_id);
    snprintf(d->last_ref, sizeof(d->last_ref), "%s", ref);
    if (status != OK)
        return status;
    *content_type = strdup("image/png");
    *data = (uint8_t *)strdup(IMG_RAW);
    *len = strlen(IMG_RAW);
    return OK;
}

static const struct uploader_ops fake_ops = {fake_upload, fake_fetch};

static json_t *entry_with_images(int n)
{
    json_t *content = json_array();

    json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text", "text", "look"));
    for (int i = 0; i < n; i++)
        json_array_append_new(content,
                              json_pack("{s:s,s:{s:s,s:s,s:s}}", "type", "image", "source", "type",
                                        "base64", "media_type", "image/png", "data", IMG_B64));
    return json_pack("{s:s,s:o}", "role", "user", "content", content);
}

static json_t *entry_with_ref(const char *ref)
{
    return json_pack("{s:s,s:[{s:s,s:{s:s,s:s,s:s}}]}", "role", "user", "content", "type", "image",
                     "source", "type", "blob", "blob_ref", ref, "media_type", "image/png");
}

static json_t *source_at(json_t *entry, size_t i)
{
    return json_object_get(json_array_get(json_object_get(entry, "content"), i), "source");
}

static const char *str_at(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_string(v) ? json_string_value(v) : "";
}

START_TEST(upload_ok_rewrites_image_to_blob_ref)
{
    struct double_blobs d = {.statuses = {OK}};
    struct uploader u;
    json_t *entry = entry_with_images(1);

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", entry), 1);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_str_eq(d.last_session, "sess-1");
    ck_assert_str_eq(d.last_type, "image/png");
    ck_assert_uint_eq(d.last_len, strlen(IMG_RAW));
    ck_assert_int_eq(memcmp(d.last_data, IMG_RAW, d.last_len), 0);
    ck_assert_str_eq(str_at(source_at(entry, 1), "type"), "blob");
    ck_assert_str_eq(str_at(source_at(entry, 1), "blob_ref"), "ref-1");
    ck_assert_str_eq(str_at(source_at(entry, 1), "media_type"), "image/png");
    ck_assert_ptr_null(json_object_get(source_at(entry, 1), "data"));
    ck_assert_uint_eq(u.uploaded, 1);
    json_decref(entry);
}
END_TEST

START_TEST(unimplemented_disables_the_uploader_for_good)
{
    struct double_blobs d = {.statuses = {UNIMPLEMENTED}};
    struct uploader u;
    json_t *entry = entry_with_images(1), *copy = json_deep_copy(entry);
    json_t *later = entry_with_images(1);

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", entry), 0);
    ck_assert(json_equal(entry, copy)); /* the image stays inline */
    ck_assert_int_eq(u.disabled, 1);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", later), 0);
    ck_assert_int_eq(d.calls, 1); /* no further upload was attempted */
    ck_assert(json_equal(later, copy));
    json_decref(entry);
    json_decref(copy);
    json_decref(later);
}
END_TEST

START_TEST(other_errors_stay_retryable_on_a_later_line)
{
    static const int errors[] = {UNAVAILABLE, FAILED_PRECONDITION, NOT_FOUND, 13, 8};

    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        struct double_blobs d = {.statuses = {errors[i], OK}};
        struct uploader u;
        json_t *entry = entry_with_images(1), *copy = json_deep_copy(entry);
        json_t *later = entry_with_images(1);

        uploader_init(&u, &fake_ops, &d);
        ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", entry), 0);
        ck_assert(json_equal(entry, copy));
        ck_assert_int_eq(u.disabled, 0);
        ck_assert_uint_eq(u.failed, 1);
        ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", later), 1);
        ck_assert_str_eq(str_at(source_at(later, 1), "blob_ref"), "ref-2");
        json_decref(entry);
        json_decref(copy);
        json_decref(later);
    }
}
END_TEST

START_TEST(a_failure_leaves_the_rest_of_the_entry_inline)
{
    struct double_blobs d = {.statuses = {UNAVAILABLE}};
    struct uploader u;
    json_t *entry = entry_with_images(3), *copy = json_deep_copy(entry);

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", entry), 0);
    ck_assert_int_eq(d.calls, 1);
    ck_assert(json_equal(entry, copy));
    json_decref(entry);
    json_decref(copy);
}
END_TEST

START_TEST(every_image_in_an_entry_is_uploaded)
{
    struct double_blobs d = {.statuses = {OK}};
    struct uploader u;
    json_t *entry = entry_with_images(3);

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "sess-1", entry), 3);
    ck_assert_str_eq(str_at(source_at(entry, 1), "blob_ref"), "ref-1");
    ck_assert_str_eq(str_at(source_at(entry, 3), "blob_ref"), "ref-3");
    ck_assert_str_eq(str_at(json_array_get(json_object_get(entry, "content"), 0), "text"), "look");
    json_decref(entry);
}
END_TEST

START_TEST(bad_base64_and_entries_without_images_make_no_call)
{
    struct double_blobs d = {.statuses = {OK}};
    struct uploader u;
    json_t *plain = json_pack("{s:s,s:s}", "role", "assistant", "text", "hi");
    json_t *bad = json_pack("{s:[{s:s,s:{s:s,s:s,s:s}}]}", "content", "type", "image", "source",
                            "type", "base64", "media_type", "image/png", "data", "not base64!");
    json_t *url = json_pack("{s:[{s:s,s:{s:s,s:s}}]}", "content", "type", "image", "source", "type",
                            "url", "url", "https://example.invalid/x.png");

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "s", plain), 0);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "s", bad), 0);
    ck_assert_int_eq(uploader_rewrite_entry(&u, "s", url), 0);
    ck_assert_int_eq(d.calls, 0);
    ck_assert_int_eq(u.disabled, 0);
    json_decref(plain);
    json_decref(bad);
    json_decref(url);
}
END_TEST

START_TEST(resume_ok_inlines_the_blob)
{
    struct double_blobs d = {.statuses = {OK}};
    struct uploader u;
    json_t *entry = entry_with_ref("ref-7");

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_resume_entry(&u, "sess-1", entry), 1);
    ck_assert_str_eq(d.last_ref, "ref-7");
    ck_assert_str_eq(str_at(source_at(entry, 0), "type"), "base64");
    ck_assert_str_eq(str_at(source_at(entry, 0), "data"), IMG_B64);
    ck_assert_str_eq(str_at(source_at(entry, 0), "media_type"), "image/png");
    json_decref(entry);
}
END_TEST

START_TEST(resume_failed_precondition_keeps_the_original_reference)
{
    struct double_blobs d = {.statuses = {FAILED_PRECONDITION}};
    struct uploader u;
    json_t *entry = entry_with_ref("ref-7"), *copy = json_deep_copy(entry);

    uploader_init(&u, &fake_ops, &d);
    ck_assert_int_eq(uploader_resume_entry(&u, "sess-1", entry), 0);
    ck_assert_int_eq(d.calls, 1);
    ck_assert(json_equal(entry, copy)); /* neither dropped nor rewritten */
    ck_assert_str_eq(str_at(source_at(entry, 0), "blob_ref"), "ref-7");
    ck_assert_uint_eq(u.kept, 1);
    ck_assert_int_eq(u.disabled, 0);
    json_decref(entry);
    json_decref(copy);
}
END_TEST

START_TEST(resume_other_failures_keep_the_reference_too)
{
    static const int errors[] = {NOT_FOUND, UNIMPLEMENTED, UNAVAILABLE};

    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        struct double_blobs d = {.statuses = {errors[i]}};
        struct uploader u;
        json_t *entry = entry_with_ref("ref-9"), *copy = json_deep_copy(entry);

        uploader_init(&u, &fake_ops, &d);
        ck_assert_int_eq(uploader_resume_entry(&u, "sess-1", entry), 0);
        ck_assert(json_equal(entry, copy));
        json_decref(entry);
        json_decref(copy);
    }
}
END_TEST

START_TEST(resume_still_fetches_after_uploads_were_disabled)
{
    struct double_blobs d = {.statuses = {UNIMPLEMENTED, OK}};
    struct uploader u;
    json_t *up = entry_with_images(1), *entry = entry_with_ref("ref-1");

    uploader_init(&u, &fake_ops, &d);
    uploader_rewrite_entry(&u, "s", up);
    ck_assert_int_eq(u.disabled, 1);
    ck_assert_int_eq(uploader_resume_entry(&u, "s", entry), 1);
    json_decref(up);
    json_decref(entry);
}
END_TEST

START_TEST(base64_round_trips)
{
    const char *samples[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *encoded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};

    for (size_t i = 0; i < 7; i++) {
        char *text = uploader_base64_encode((const uint8_t *)samples[i], strlen(samples[i]));
        uint8_t *raw;
        size_t len;
        ck_assert_str_eq(text, encoded[i]);
        ck_assert_int_eq(uploader_base64_decode(text, strlen(text), &raw, &len), 0);
        ck_assert_uint_eq(len, strlen(samples[i]));
        ck_assert_int_eq(memcmp(raw, samples[i], len), 0);
        free(raw);
        free(text);
    }
    {
        uint8_t *raw;
        size_t len;
        ck_assert_int_eq(uploader_base64_decode("Zm9", 3, &raw, &len), -1);
        ck_assert_int_eq(uploader_base64_decode("Zm9*", 4, &raw, &len), -1);
    }
}
END_TEST

Suite *runner_uploader_suite(void)
{
    Suite *s = suite_create("runner_uploader");
    TCase *up = tcase_create("upload");
    TCase *resume = tcase_create("resume");

    tcase_add_test(up, upload_ok_rewrites_image_to_blob_ref);
    tcase_add_test(up, unimplemented_disables_the_uploader_for_good);
    tcase_add_test(up, other_errors_stay_retryable_on_a_later_line);
    tcase_add_test(up, a_failure_leaves_the_rest_of_the_entry_inline);
    tcase_add_test(up, every_image_in_an_entry_is_uploaded);
    tcase_add_test(up, bad_base64_and_entries_without_images_make_no_call);
    tcase_add_test(up, base64_round_trips);
    tcase_add_test(resume, resume_ok_inlines_the_blob);
    tcase_add_test(resume, resume_failed_precondition_keeps_the_original_reference);
    tcase_add_test(resume, resume_other_failures_keep_the_reference_too);
    tcase_add_test(resume, resume_still_fetches_after_uploads_were_disabled);
    suite_add_tcase(s, up);
    suite_add_tcase(s, resume);
    return s;
}
