/* Provisioning: the declarative import (idempotency, every reference error,
 * all-or-nothing, tokens as hashes only) and the `agenthub admin` command
 * line (exit statuses, token issue/revoke, --json lists). */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/auth.h"
#include "store/gate.h"
#include "store/import.h"
#include "store_fixture.h"

static struct store_fixture fx;
static char err[512];

static void setup(void)
{
    store_fixture_open(&fx);
    err[0] = '\0';
}

static void teardown(void)
{
    store_fixture_close(&fx);
}

/* Imports document TEXT; returns the store result, message in err. */
static int import_text(const char *text, int *changes)
{
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    int rc;

    ck_assert_msg(root != NULL, "test JSON: %s", jerr.text);
    rc = store_import_json(fx.s, root, changes, err, sizeof(err));
    json_decref(root);
    return rc;
}

/* Asserts TEXT is refused with exactly MESSAGE. */
static void refused(const char *text, const char *message)
{
    ck_assert_int_eq(import_text(text, NULL), STORE_INVALID);
    ck_assert_str_eq(err, message);
}

static int exists(enum store_entity kind, const char *id)
{
    return fx.s->ops->exists(fx.s->impl, kind, id) == STORE_OK;
}

/* --- import --- */

START_TEST(import_builds_the_world)
{
    struct store_session s;
    struct store_account a;
    int changes = 0;

    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, &changes), STORE_OK);
    ck_assert_int_gt(changes, 20);
    ck_assert_int_eq(fx.s->ops->account_get(fx.s->impl, "agent-1", &a), STORE_OK);
    ck_assert_int_eq(a.kind, STORE_ACCOUNT_AGENT);
    ck_assert_str_eq(a.home_channel_id, "chan-a");
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    ck_assert_str_eq(s.owner_account_id, "alice");
    ck_assert_int_eq(fx.s->ops->member_check(fx.s->impl, "bob", "chan-a"), STORE_OK);
}
END_TEST

START_TEST(second_import_of_the_same_file_changes_nothing)
{
    int changes = -1;

    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, &changes), STORE_OK);
    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, &changes), STORE_OK);
    ck_assert_int_eq(changes, 0);
}
END_TEST

START_TEST(import_updates_what_the_file_says_and_keeps_the_rest)
{
    int changes = 0;

    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, NULL), STORE_OK);
    ck_assert_int_eq(import_text("{\"accounts\": [{\"id\": \"bob\", \"admin\": true}],"
                                 " \"channels\": [{\"id\": \"chan-a\", \"members\": [\"alice\"]}]}",
                                 &changes),
                     STORE_OK);
    ck_assert_int_eq(changes, 3); /* bob's flag; bob and agent-1 leave chan-a */
    ck_assert_int_eq(fx.s->ops->member_check(fx.s->impl, "bob", "chan-a"), STORE_NOT_FOUND);
    ck_assert_int_eq(fx.s->ops->member_check(fx.s->impl, "alice", "chan-a"), STORE_OK);
    ck_assert(exists(STORE_ENTITY_ACCOUNT, "carol"));
    ck_assert(exists(STORE_ENTITY_SESSION, "sess-2"));
}
END_TEST

START_TEST(reimport_does_not_revive_a_revoked_token)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;

    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, NULL), STORE_OK);
    ck_assert_int_eq(auth_hash_token("t-alice", 7, h), 0);
    ck_assert_int_eq(fx.s->ops->token_revoke(fx.s->impl, h, NULL), STORE_OK);
    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, NULL), STORE_OK);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
}
END_TEST

START_TEST(every_reference_error_names_its_json_path)
{
    refused("{\"containers\": [{\"name\": \"c\", \"agent_account\": \"x\", \"runner\": \"r\"}]}",
            "containers[0].agent_account: no account \"x\"");
    refused("{\"accounts\": [{\"id\": \"a\", \"kind\": \"agent\"}], \"containers\": [{\"name\": "
            "\"c\", \"agent_account\": \"a\", \"runner\": \"r\"}]}",
            "containers[0].runner: no runner \"r\"");
    refused("{\"accounts\": [{\"id\": \"h\"}], \"runners\": [{\"id\": \"r\"}], \"containers\": "
            "[{\"name\": \"c\", \"agent_account\": \"h\", \"runner\": \"r\"}]}",
            "containers[0].agent_account: account \"h\" is not an agent");
    refused("{\"accounts\": [{\"id\": \"a\", \"kind\": \"agent\", \"home_channel\": \"nope\"}]}",
            "accounts[0].home_channel: no channel \"nope\"");
    refused("{\"channels\": [{\"id\": \"c\"}], \"accounts\": [{\"id\": \"h\", \"home_channel\": "
            "\"c\"}]}",
            "accounts[0].home_channel: only agent accounts have a home channel");
    refused("{\"channels\": [{\"id\": \"c\", \"members\": [\"ghost\"]}]}",
            "channels[0].members[0]: no account \"ghost\"");
    refused("{\"sessions\": [{\"id\": \"s\", \"container\": \"nope\"}]}",
            "sessions[0].container: no container \"nope\"");
    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, NULL), STORE_OK);
    refused("{\"sessions\": [{\"id\": \"s\", \"container\": \"ctr-1\", \"owner\": \"ghost\"}]}",
            "sessions[0].owner: no account \"ghost\"");
    refused("{\"runners\": [{\"id\": \"r\", \"tokens\": [\"t-alice\"]}]}",
            "runners[0].tokens[0]: token is already bound to another subject");
}
END_TEST

START_TEST(shape_errors_name_their_json_path)
{
    refused("[]", "(root): expected an object");
    refused("{\"acounts\": []}", "(root).acounts: unknown key");
    refused("{\"accounts\": {}}", "accounts: expected an array");
    refused("{\"accounts\": [7]}", "accounts[0]: expected an object");
    refused("{\"accounts\": [{\"kind\": \"human\"}]}", "accounts[0].id: missing");
    refused("{\"accounts\": [{\"id\": 5}]}", "accounts[0].id: expected a string");
    refused("{\"accounts\": [{\"id\": \"a\", \"kind\": \"robot\"}]}",
            "accounts[0].kind: expected \"human\" or \"agent\"");
    refused("{\"accounts\": [{\"id\": \"a\", \"admin\": \"yes\"}]}",
            "accounts[0].admin: expected true or false");
    refused("{\"accounts\": [{\"id\": \"a\", \"colour\": \"red\"}]}",
            "accounts[0].colour: unknown key");
    refused("{\"accounts\": [{\"id\": \"a\"}, {\"id\": \"a\"}]}",
            "accounts[1]: duplicate account \"a\"");
    refused("{\"accounts\": [{\"id\": \"a\", \"tokens\": [\"\"]}]}",
            "accounts[0].tokens[0]: a token is 1 to 1024 visible characters");
}
END_TEST

START_TEST(half_bad_file_leaves_the_database_untouched)
{
    static const char half_bad[] =
        "{\"accounts\": [{\"id\": \"new-agent\", \"kind\": \"agent\", \"tokens\": [\"t-new\"]}],"
        " \"channels\": [{\"id\": \"chan-a\", \"members\": [\"alice\"]}],"
        " \"runners\": [{\"id\": \"runner-9\"}],"
        " \"containers\": [{\"name\": \"ctr-9\", \"agent_account\": \"new-agent\", \"runner\": "
        "\"runner-9\"}],"
        " \"sessions\": [{\"id\": \"sess-9\", \"container\": \"ctr-9\", \"owner\": \"nobody\"}]}";
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;

    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, NULL), STORE_OK);
    refused(half_bad, "sessions[0].owner: no account \"nobody\"");
    ck_assert(!exists(STORE_ENTITY_ACCOUNT, "new-agent"));
    ck_assert(!exists(STORE_ENTITY_RUNNER, "runner-9"));
    ck_assert(!exists(STORE_ENTITY_CONTAINER, "ctr-9"));
    ck_assert_int_eq(fx.s->ops->member_check(fx.s->impl, "bob", "chan-a"), STORE_OK);
    ck_assert_int_eq(auth_hash_token("t-new", 5, h), 0);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
}
END_TEST

START_TEST(plain_text_tokens_never_reach_the_database_file)
{
    char wal[400];

    ck_assert_int_eq(import_text(STORE_FIXTURE_WORLD_JSON, NULL), STORE_OK);
    snprintf(wal, sizeof(wal), "%s-wal", fx.db);
    ck_assert(store_fixture_file_contains(wal, "alice")); /* the search works */
    ck_assert(!store_fixture_file_contains(wal, "t-alice"));
    ck_assert(!store_fixture_file_contains(wal, "t-runner-1"));
    ck_assert(!store_fixture_file_contains(fx.db, "t-alice"));
    store_close(fx.s); /* the last close checkpoints the WAL into the file */
    fx.s = NULL;
    ck_assert(store_fixture_file_contains(fx.db, "alice"));
    ck_assert(!store_fixture_file_contains(fx.db, "t-alice"));
    ck_assert(!store_fixture_file_contains(fx.db, "t-admin"));
    ck_assert(!store_fixture_file_contains(fx.db, "t-runner-1"));
    ck_assert(!store_fixture_file_contains(fx.db, "t-agent-1"));
}
END_TEST

START_TEST(malformed_json_file_is_refused_with_its_position)
{
    char path[400];
    FILE *f;

    snprintf(path, sizeof(path), "%s/bad.json", fx.dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"accounts\": [\n  {\"id\": \"a\",}\n]}\n", f);
    fclose(f);
    ck_assert_int_eq(store_import_file(fx.s, path, NULL, err, sizeof(err)), STORE_INVALID);
    ck_assert_msg(strstr(err, "bad.json:2:") != NULL, "message: %s", err);
    unlink(path);
    snprintf(path, sizeof(path), "%s/dup.json", fx.dir);
    f = fopen(path, "w");
    fputs("{\"accounts\": [], \"accounts\": []}", f);
    fclose(f);
    ck_assert_int_eq(store_import_file(fx.s, path, NULL, err, sizeof(err)), STORE_INVALID);
    unlink(path);
}
END_TEST

/* Writes TEXT to DIR/NAME and imports it; returns the result (err set). */
static int import_file_text(const char *name, const char *text)
{
    char path[400];
    FILE *f;
    int rc;

    snprintf(path, sizeof(path), "%s/%s", fx.dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    rc = store_import_file(fx.s, path, NULL, err, sizeof(err));
    unlink(path);
    return rc;
}

START_TEST(a_malformed_file_never_echoes_token_material)
{
    static const char *const files[] = {
        /* A missing comma between two tokens: jansson would quote the second. */
        "{\"accounts\": [{\"id\": \"a\", \"tokens\": [\"s3cret-one\" \"s3cret-two\"]}]}",
        /* An unterminated token string. */
        "{\"accounts\": [{\"id\": \"a\", \"tokens\": [\"s3cret-one\n\"]}]}",
        /* Text after the document. */
        "{\"accounts\": []} s3cret-one",
        /* A token where a key belongs, twice. */
        "{\"accounts\": [{\"id\": \"a\", \"s3cret-one\": 1, \"s3cret-one\": 2}]}",
        /* Bytes that are not UTF-8 inside a token. */
        "{\"accounts\": [{\"id\": \"a\", \"tokens\": [\"s3cret-one\xff\"]}]}",
    };

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        ck_assert_int_eq(import_file_text("bad.json", files[i]), STORE_INVALID);
        ck_assert_msg(strstr(err, "s3cret") == NULL && strstr(err, "near") == NULL, "file %zu: %s",
                      i, err);
        ck_assert_msg(strstr(err, "bad.json:1:") != NULL, "file %zu: %s", i, err);
    }
    ck_assert_int_eq(import_file_text("bad.json", files[0]), STORE_INVALID);
    ck_assert_msg(strstr(err, ": invalid JSON") != NULL, "%s", err);
    ck_assert_int_eq(import_file_text("bad.json", files[3]), STORE_INVALID);
    ck_assert_msg(strstr(err, ": a duplicate object key") != NULL, "%s", err);
    /* A well-formed file with a token where a key belongs names no key. */
    refused("{\"accounts\": [{\"id\": \"a\", \"s3cret-one\": 1}]}",
            "accounts[0]: an unknown key that is not a lowercase word (not shown)");
}
END_TEST

/* --- the command line --- */

static char agenthub[PATH_MAX + 16];

/* Finds the agenthub binary next to this test's build directory. */
static int find_agenthub(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;

    if (n <= 0)
        return 0;
    self[n] = '\0';
    slash = strrchr(self, '/'); /* BUILD/tests/test_admin */
    if (!slash)
        return 0;
    *slash = '\0';
    slash = strrchr(self, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    snprintf(agenthub, sizeof(agenthub), "%s/agenthub", self);
    return access(agenthub, X_OK) == 0;
}

/* Runs `agenthub admin --db DB ARGS`; returns its exit status, stdout in
 * OUT and stderr in ERRS. */
static int cli(const char *args, char *out, size_t outlen, char *errs, size_t errlen)
{
    char cmd[PATH_MAX + 2048], errpath[400];
    FILE *p, *e;
    size_t n;
    int status;

    snprintf(errpath, sizeof(errpath), "%s/stderr.txt", fx.dir);
    snprintf(cmd, sizeof(cmd), "'%s' admin --db '%s' %s 2>'%s'", agenthub, fx.db, args, errpath);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    status = pclose(p);
    e = fopen(errpath, "r");
    n = e ? fread(errs, 1, errlen - 1, e) : 0;
    errs[n] = '\0';
    if (e)
        fclose(e);
    unlink(errpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void cli_setup(void)
{
    setup();
    if (!find_agenthub())
        agenthub[0] = '\0';
}

#define NEED_CLI()                                                                                 \
    do {                                                                                           \
        ck_assert_msg(agenthub[0] != 0, "agenthub is not built next to this test");                \
    } while (0)

static void write_file(const char *name, const char *text, char *path, size_t len)
{
    FILE *f;

    snprintf(path, len, "%s/%s", fx.dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(cli_import_is_idempotent_and_refuses_bad_files_with_status_2)
{
    char out[4096], errs[4096], path[400], args[600];

    NEED_CLI();
    write_file("world.json", STORE_FIXTURE_WORLD_JSON, path, sizeof(path));
    snprintf(args, sizeof(args), "import '%s'", path);
    ck_assert_int_eq(cli(args, out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(cli(args, out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_msg(strstr(out, ": 0 changes") != NULL, "stdout: %s", out);
    write_file("bad.json",
               "{\"containers\": [{\"name\": \"c\", \"agent_account\": \"x\", \"runner\": "
               "\"runner-1\"}]}",
               path, sizeof(path));
    snprintf(args, sizeof(args), "import '%s'", path);
    ck_assert_int_eq(cli(args, out, sizeof(out), errs, sizeof(errs)), 2);
    ck_assert_msg(strstr(errs, "containers[0].agent_account: no account \"x\"") != NULL,
                  "stderr: %s", errs);
}
END_TEST

START_TEST(cli_issued_token_authenticates_until_revoked)
{
    char out[4096], errs[4096], args[4200], header[4200];
    struct store_subject subj;

    NEED_CLI();
    store_fixture_world(&fx);
    ck_assert_int_eq(cli("token issue --account bob", out, sizeof(out), errs, sizeof(errs)), 0);
    out[strcspn(out, "\n")] = '\0';
    ck_assert_int_eq(strlen(out), AUTH_TOKEN_TEXT_LEN);
    ck_assert(strstr(errs, out) == NULL);
    snprintf(header, sizeof(header), "Bearer %s", out);
    ck_assert_int_eq(auth_authenticate(fx.s, AUTH_DOOR_PUBLIC, header, strlen(header), &subj),
                     AUTH_OK);
    ck_assert_str_eq(subj.id, "bob");
    snprintf(args, sizeof(args), "token revoke '%s'", out);
    ck_assert_int_eq(cli(args, out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(auth_authenticate(fx.s, AUTH_DOOR_PUBLIC, header, strlen(header), &subj),
                     AUTH_UNAUTHENTICATED);
    ck_assert_int_eq(cli("token revoke never-issued", out, sizeof(out), errs, sizeof(errs)), 1);
    ck_assert_int_eq(cli("token issue --account ghost", out, sizeof(out), errs, sizeof(errs)), 1);
    ck_assert_int_eq(cli("token issue", out, sizeof(out), errs, sizeof(errs)), 2);
}
END_TEST

START_TEST(cli_lists_print_json)
{
    char out[8192], errs[4096];
    json_error_t jerr;
    json_t *arr;

    NEED_CLI();
    store_fixture_world(&fx);
    ck_assert_int_eq(cli("sessions list --json", out, sizeof(out), errs, sizeof(errs)), 0);
    arr = json_loads(out, 0, &jerr);
    ck_assert_msg(arr != NULL, "not JSON: %s", out);
    ck_assert_int_eq(json_array_size(arr), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 0), "id")), "sess-1");
    json_decref(arr);
    ck_assert_int_eq(
        cli("members list --channel chan-b --json", out, sizeof(out), errs, sizeof(errs)), 0);
    arr = json_loads(out, 0, &jerr);
    ck_assert_ptr_nonnull(arr);
    ck_assert_int_eq(json_array_size(arr), 2);
    json_decref(arr);
    ck_assert_int_eq(cli("token list --json", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert(strstr(out, "t-alice") == NULL);
}
END_TEST

START_TEST(cli_add_remove_and_exit_statuses)
{
    char out[4096], errs[4096];

    NEED_CLI();
    ck_assert_int_eq(cli("init", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(cli("channels add chan-z", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(cli("accounts add ag --kind agent --home-channel chan-z", out, sizeof(out),
                         errs, sizeof(errs)),
                     0);
    ck_assert_int_eq(cli("runners add r1", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(
        cli("containers add c1 --agent ag --runner r1", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(cli("accounts add hu", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(cli("members add hu chan-z", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(
        cli("sessions add --container c1 --owner hu", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert(strncmp(out, "s-", 2) == 0);
    ck_assert_int_eq(cli("channels remove chan-z", out, sizeof(out), errs, sizeof(errs)), 1);
    ck_assert_int_eq(cli("channels remove nope", out, sizeof(out), errs, sizeof(errs)), 1);
    ck_assert_int_eq(
        cli("containers add c2 --agent hu --runner r1", out, sizeof(out), errs, sizeof(errs)), 2);
    ck_assert_int_eq(cli("members add ghost chan-z", out, sizeof(out), errs, sizeof(errs)), 2);
    ck_assert_int_eq(cli("accounts frobnicate", out, sizeof(out), errs, sizeof(errs)), 2);
    ck_assert_int_eq(cli("accounts list --bogus", out, sizeof(out), errs, sizeof(errs)), 2);
    ck_assert_int_eq(cli("accounts --help", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert(strstr(out, "usage:") != NULL);
    ck_assert_int_eq(cli("--help", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(cli("accounts list", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert(strstr(out, "ag\tagent\t-\tchan-z") != NULL);
}
END_TEST

START_TEST(cli_refuses_a_missing_database_except_for_init_and_import)
{
    char out[4096], errs[4096], saved[300];

    NEED_CLI();
    snprintf(saved, sizeof(saved), "%s", fx.db);
    snprintf(fx.db, sizeof(fx.db), "%s/none.db", fx.dir);
    ck_assert_int_eq(cli("accounts list", out, sizeof(out), errs, sizeof(errs)), 1);
    ck_assert(access(fx.db, F_OK) != 0);
    snprintf(fx.db, sizeof(fx.db), "%s", saved);
}
END_TEST

START_TEST(cli_changes_reach_a_running_store_on_its_next_call)
{
    struct store_subject bob = {STORE_SUBJECT_ACCOUNT, "bob", 0};
    char out[4096], errs[4096], header[64];

    NEED_CLI();
    store_fixture_world(&fx);
    /* Warm the cache, then change things from another process. */
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_BOUND);
    ck_assert_int_eq(cli("members remove bob chan-a", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(cli("containers add ctr-1 --agent agent-1 --runner runner-2", out, sizeof(out),
                         errs, sizeof(errs)),
                     0);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_NOT_BOUND);
    snprintf(header, sizeof(header), "Bearer t-carol");
    ck_assert_int_eq(auth_authenticate(fx.s, AUTH_DOOR_PUBLIC, header, strlen(header), &bob),
                     AUTH_OK);
    ck_assert_int_eq(cli("token revoke --account carol", out, sizeof(out), errs, sizeof(errs)), 0);
    ck_assert_int_eq(auth_authenticate(fx.s, AUTH_DOOR_PUBLIC, header, strlen(header), &bob),
                     AUTH_UNAUTHENTICATED);
}
END_TEST

Suite *admin_suite(void)
{
    Suite *s = suite_create("admin");
    TCase *tc = tcase_create("import");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, import_builds_the_world);
    tcase_add_test(tc, second_import_of_the_same_file_changes_nothing);
    tcase_add_test(tc, import_updates_what_the_file_says_and_keeps_the_rest);
    tcase_add_test(tc, reimport_does_not_revive_a_revoked_token);
    tcase_add_test(tc, every_reference_error_names_its_json_path);
    tcase_add_test(tc, shape_errors_name_their_json_path);
    tcase_add_test(tc, half_bad_file_leaves_the_database_untouched);
    tcase_add_test(tc, plain_text_tokens_never_reach_the_database_file);
    tcase_add_test(tc, malformed_json_file_is_refused_with_its_position);
    tcase_add_test(tc, a_malformed_file_never_echoes_token_material);
    suite_add_tcase(s, tc);

    tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, cli_setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, cli_import_is_idempotent_and_refuses_bad_files_with_status_2);
    tcase_add_test(tc, cli_issued_token_authenticates_until_revoked);
    tcase_add_test(tc, cli_lists_print_json);
    tcase_add_test(tc, cli_add_remove_and_exit_statuses);
    tcase_add_test(tc, cli_refuses_a_missing_database_except_for_init_and_import);
    tcase_add_test(tc, cli_changes_reach_a_running_store_on_its_next_call);
    suite_add_tcase(s, tc);
    return s;
}
