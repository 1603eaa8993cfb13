/* Authentication: the bearer header, hashing, doors, revocation, minting
 * and faults. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/auth.h"
#include "store_fixture.h"

static struct store_fixture fx;

static void setup(void)
{
    store_fixture_open(&fx);
    store_fixture_world(&fx);
}

static void teardown(void)
{
    store_fixture_close(&fx);
}

static int authn(enum auth_door door, const char *header, struct store_subject *out)
{
    struct store_subject scratch;

    return auth_authenticate(fx.s, door, header, header ? strlen(header) : 0, out ? out : &scratch);
}

START_TEST(bearer_header_is_parsed_strictly)
{
    const char *tok;
    size_t len;

    ck_assert_int_eq(auth_parse_bearer("Bearer abc", 10, &tok, &len), 0);
    ck_assert_int_eq(len, 3);
    ck_assert(strncmp(tok, "abc", 3) == 0);
    ck_assert_int_eq(auth_parse_bearer("bearer   abc", 12, &tok, &len), 0);
    ck_assert_int_eq(len, 3);
    ck_assert_int_eq(auth_parse_bearer("Bearer", 6, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer("Bearer ", 7, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer("Basic abc", 9, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer("Bearerabc", 9, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer("Bearer a b", 10, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer("Bearer a\tb", 10, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer("Bearer ab\0c", 11, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer(NULL, 0, &tok, &len), -1);
}
END_TEST

START_TEST(overlong_token_is_malformed)
{
    char buf[AUTH_TOKEN_MAX + 16];
    const char *tok;
    size_t len;

    memcpy(buf, "Bearer ", 7);
    memset(buf + 7, 'x', AUTH_TOKEN_MAX + 1);
    ck_assert_int_eq(auth_parse_bearer(buf, 7 + AUTH_TOKEN_MAX + 1, &tok, &len), -1);
    ck_assert_int_eq(auth_parse_bearer(buf, 7 + AUTH_TOKEN_MAX, &tok, &len), 0);
}
END_TEST

START_TEST(hash_is_sha256)
{
    uint8_t h[STORE_HASH_LEN];
    static const uint8_t abc[STORE_HASH_LEN] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                                0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                                0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                                0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};

    ck_assert_int_eq(auth_hash_token("abc", 3, h), 0);
    ck_assert_mem_eq(h, abc, STORE_HASH_LEN);
}
END_TEST

START_TEST(account_token_on_public_door_is_that_account)
{
    struct store_subject subj;

    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", &subj), AUTH_OK);
    ck_assert_int_eq(subj.kind, STORE_SUBJECT_ACCOUNT);
    ck_assert_str_eq(subj.id, "alice");
    ck_assert_int_eq(subj.is_admin, 0);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-admin", &subj), AUTH_OK);
    ck_assert_int_eq(subj.is_admin, 1);
}
END_TEST

START_TEST(runner_token_on_runner_door_is_that_runner)
{
    struct store_subject subj;

    ck_assert_int_eq(authn(AUTH_DOOR_RUNNER, "Bearer t-runner-1", &subj), AUTH_OK);
    ck_assert_int_eq(subj.kind, STORE_SUBJECT_RUNNER);
    ck_assert_str_eq(subj.id, "runner-1");
}
END_TEST

START_TEST(wrong_door_is_unauthenticated)
{
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-runner-1", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_RUNNER, "Bearer t-alice", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_RUNNER, "Bearer t-admin", NULL), AUTH_UNAUTHENTICATED);
}
END_TEST

START_TEST(missing_malformed_and_unknown_are_unauthenticated)
{
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, NULL, NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "t-alice", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Basic t-alice", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-mallory", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alicE", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_str_eq(AUTH_UNAUTHENTICATED_MESSAGE, "missing or invalid credentials");
}
END_TEST

START_TEST(token_revoked_by_another_process_is_dead_on_the_next_call)
{
    struct store *admin = store_fixture_second_handle(&fx);
    uint8_t h[STORE_HASH_LEN];

    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-bob", NULL), AUTH_OK);
    ck_assert_int_eq(auth_hash_token("t-bob", 5, h), 0);
    ck_assert_int_eq(admin->ops->token_revoke(admin->impl, h, NULL), STORE_OK);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-bob", NULL), AUTH_UNAUTHENTICATED);
    store_close(admin);
}
END_TEST

START_TEST(admin_flag_follows_the_account_on_the_next_call)
{
    struct store *admin = store_fixture_second_handle(&fx);
    struct store_account a = {"alice", STORE_ACCOUNT_HUMAN, 1, ""};
    struct store_subject subj;

    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", &subj), AUTH_OK);
    ck_assert_int_eq(subj.is_admin, 0);
    ck_assert_int_eq(admin->ops->account_put(admin->impl, &a, NULL), STORE_OK);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", &subj), AUTH_OK);
    ck_assert_int_eq(subj.is_admin, 1);
    store_close(admin);
}
END_TEST

START_TEST(minted_tokens_are_43_base64url_chars_and_authenticate)
{
    char a[AUTH_TOKEN_TEXT_LEN + 1], b[AUTH_TOKEN_TEXT_LEN + 1], header[64];
    uint8_t ha[STORE_HASH_LEN], hb[STORE_HASH_LEN], check[STORE_HASH_LEN];
    struct store_subject subj;

    ck_assert_int_eq(auth_mint_token(a, sizeof(a), ha), 0);
    ck_assert_int_eq(auth_mint_token(b, sizeof(b), hb), 0);
    ck_assert_int_eq(strlen(a), AUTH_TOKEN_TEXT_LEN);
    ck_assert_int_eq(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                     AUTH_TOKEN_TEXT_LEN);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(auth_hash_token(a, strlen(a), check), 0);
    ck_assert_mem_eq(check, ha, STORE_HASH_LEN);
    ck_assert_int_eq(auth_mint_token(a, AUTH_TOKEN_TEXT_LEN, ha), -1);
    ck_assert_int_eq(auth_mint_token(b, sizeof(b), hb), 0);
    ck_assert_int_eq(fx.s->ops->token_add(fx.s->impl, hb, STORE_SUBJECT_ACCOUNT, "carol", NULL),
                     STORE_OK);
    snprintf(header, sizeof(header), "Bearer %s", b);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, header, &subj), AUTH_OK);
    ck_assert_str_eq(subj.id, "carol");
}
END_TEST

static int count_token(const struct store_token_info *t, void *arg)
{
    (void)t;
    ++*(int *)arg;
    return 0;
}

static int token_rows(void)
{
    int n = 0;

    ck_assert_int_eq(fx.s->ops->token_list(fx.s->impl, count_token, &n), STORE_OK);
    return n;
}

START_TEST(token_text_has_a_bearer_token_s_shape)
{
    char big[AUTH_TOKEN_MAX + 1];

    memset(big, 'x', sizeof(big));
    ck_assert(auth_token_text_valid("t-bob", 5));
    ck_assert(auth_token_text_valid(big, AUTH_TOKEN_MAX));
    ck_assert(!auth_token_text_valid(big, AUTH_TOKEN_MAX + 1));
    ck_assert(!auth_token_text_valid("", 0));
    ck_assert(!auth_token_text_valid(NULL, 0));
    ck_assert(!auth_token_text_valid("a b", 3));
    ck_assert(!auth_token_text_valid("a\x7f", 2));
    ck_assert(!auth_token_text_valid("\xc3\xa9", 2));
}
END_TEST

START_TEST(an_issued_token_speaks_for_its_subject_and_only_its_hash_is_kept)
{
    char token[AUTH_TOKEN_TEXT_LEN + 1], header[64];
    uint8_t hash[STORE_HASH_LEN], check[STORE_HASH_LEN];
    struct store_subject subj;
    int before = token_rows();

    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_ACCOUNT, "alice", token, hash), STORE_OK);
    ck_assert_uint_eq(strlen(token), AUTH_TOKEN_TEXT_LEN);
    ck_assert_int_eq(auth_hash_token(token, strlen(token), check), 0);
    ck_assert_mem_eq(check, hash, STORE_HASH_LEN);
    snprintf(header, sizeof(header), "Bearer %s", token);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, header, &subj), AUTH_OK);
    ck_assert_str_eq(subj.id, "alice");
    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_RUNNER, "runner-2", token, hash),
                     STORE_OK);
    snprintf(header, sizeof(header), "Bearer %s", token);
    ck_assert_int_eq(authn(AUTH_DOOR_RUNNER, header, &subj), AUTH_OK);
    ck_assert_str_eq(subj.id, "runner-2");
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, header, NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(token_rows(), before + 2);
}
END_TEST

START_TEST(issuing_for_a_missing_or_malformed_subject_stores_nothing)
{
    char token[AUTH_TOKEN_TEXT_LEN + 1];
    uint8_t hash[STORE_HASH_LEN];
    int before = token_rows();

    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_ACCOUNT, "ghost", token, hash),
                     STORE_NOT_FOUND);
    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_RUNNER, "alice", token, hash),
                     STORE_NOT_FOUND);
    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_ACCOUNT, "", token, hash), STORE_INVALID);
    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_ACCOUNT, "a b", token, hash),
                     STORE_INVALID);
    ck_assert_int_eq(auth_issue_token(fx.s, STORE_SUBJECT_NONE, "alice", token, hash),
                     STORE_INVALID);
    ck_assert_int_eq(token_rows(), before);
}
END_TEST

START_TEST(revoking_by_value_is_idempotent_and_names_whom_it_spoke_for_once)
{
    uint8_t hash[STORE_HASH_LEN], check[STORE_HASH_LEN];
    struct store_subject was;
    int changed = -1;

    ck_assert_int_eq(auth_revoke_token(fx.s, "t-bob", 5, hash, &was, &changed), STORE_OK);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(was.kind, STORE_SUBJECT_ACCOUNT);
    ck_assert_str_eq(was.id, "bob");
    ck_assert_int_eq(auth_hash_token("t-bob", 5, check), 0);
    ck_assert_mem_eq(check, hash, STORE_HASH_LEN);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-bob", NULL), AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(auth_revoke_token(fx.s, "t-bob", 5, hash, &was, &changed), STORE_OK);
    ck_assert_int_eq(changed, 0);
    ck_assert_int_eq(was.kind, STORE_SUBJECT_NONE);
    ck_assert_int_eq(auth_revoke_token(fx.s, "t-never", 7, hash, &was, &changed), STORE_NOT_FOUND);
    ck_assert_int_eq(auth_revoke_token(fx.s, "", 0, hash, &was, &changed), STORE_INVALID);
    ck_assert_int_eq(auth_revoke_token(fx.s, "t-bob ", 6, hash, &was, &changed), STORE_INVALID);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", NULL), AUTH_OK);
}
END_TEST

START_TEST(store_fault_is_a_fault_not_unauthenticated)
{
    char path[400];

    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", NULL), AUTH_OK);
    store_fixture_scribble(fx.db);
    snprintf(path, sizeof(path), "%s-wal", fx.db);
    store_fixture_scribble(path);
    snprintf(path, sizeof(path), "%s-shm", fx.db);
    store_fixture_scribble(path);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", NULL), AUTH_FAULT);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-unknown", NULL), AUTH_FAULT);
    /* A malformed header never reaches the store. */
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Basic x", NULL), AUTH_UNAUTHENTICATED);
}
END_TEST

#ifdef AGENTHUB_FAILPOINTS
START_TEST(token_failpoint_faults_authentication)
{
    setenv("AGENTHUB_FAILPOINTS", "store.token=fault", 1);
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", NULL), AUTH_FAULT);
    unsetenv("AGENTHUB_FAILPOINTS");
    ck_assert_int_eq(authn(AUTH_DOOR_PUBLIC, "Bearer t-alice", NULL), AUTH_OK);
}
END_TEST
#endif

START_TEST(minted_session_ids_are_s_dash_and_32_lowercase_hex_digits)
{
    char a[STORE_ID_MAX], b[STORE_ID_MAX];

    ck_assert_int_eq(auth_mint_session_id(a), 0);
    ck_assert_int_eq(auth_mint_session_id(b), 0);
    ck_assert_uint_eq(strlen(a), AUTH_SESSION_ID_LEN);
    ck_assert(strncmp(a, "s-", 2) == 0);
    ck_assert_uint_eq(strspn(a + 2, "0123456789abcdef"), AUTH_SESSION_ID_LEN - 2);
    ck_assert_str_ne(a, b);
}
END_TEST

Suite *auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = tcase_create("header");

    tcase_add_test(tc, bearer_header_is_parsed_strictly);
    tcase_add_test(tc, overlong_token_is_malformed);
    tcase_add_test(tc, hash_is_sha256);
    tcase_add_test(tc, token_text_has_a_bearer_token_s_shape);
    tcase_add_test(tc, minted_session_ids_are_s_dash_and_32_lowercase_hex_digits);
    suite_add_tcase(s, tc);

    tc = tcase_create("authenticate");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, account_token_on_public_door_is_that_account);
    tcase_add_test(tc, runner_token_on_runner_door_is_that_runner);
    tcase_add_test(tc, wrong_door_is_unauthenticated);
    tcase_add_test(tc, missing_malformed_and_unknown_are_unauthenticated);
    tcase_add_test(tc, token_revoked_by_another_process_is_dead_on_the_next_call);
    tcase_add_test(tc, admin_flag_follows_the_account_on_the_next_call);
    tcase_add_test(tc, minted_tokens_are_43_base64url_chars_and_authenticate);
    tcase_add_test(tc, an_issued_token_speaks_for_its_subject_and_only_its_hash_is_kept);
    tcase_add_test(tc, issuing_for_a_missing_or_malformed_subject_stores_nothing);
    tcase_add_test(tc, revoking_by_value_is_idempotent_and_names_whom_it_spoke_for_once);
    tcase_add_test(tc, store_fault_is_a_fault_not_unauthenticated);
#ifdef AGENTHUB_FAILPOINTS
    tcase_add_test(tc, token_failpoint_faults_authentication);
#endif
    suite_add_tcase(s, tc);
    return s;
}
