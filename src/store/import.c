/* import: see import.h.
 *
 * One pass inside one transaction, sections in dependency order (channels,
 * runners, accounts and their tokens, memberships, containers, sessions),
 * so every reference a section makes is either already in the database or
 * was written moments before by an earlier section.  Any problem rolls the
 * whole file back. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/auth.h"
#include "store/import.h"

#define PATH_MAX_LEN 256

struct imp {
    struct store *s;
    char *err;
    size_t errlen;
    int changes;
    json_t *seen; /* "section\0id" keys already defined in this file */
};

static enum store_rc fail(struct imp *im, enum store_rc rv, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes "PATH: message" into the error buffer; returns RV. */
static enum store_rc fail(struct imp *im, enum store_rc rv, const char *path, const char *fmt, ...)
{
    char msg[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(im->err, im->errlen, "%s: %s", path, msg);
    return rv;
}

/* Maps a failed store write at PATH to an error message. */
static enum store_rc write_failed(struct imp *im, enum store_rc rc, const char *path)
{
    if (rc == STORE_FAULT)
        return fail(im, STORE_FAULT, path, "the store failed");
    return fail(im, STORE_INVALID, path, "refused by the store (%s)", store_rc_name(rc));
}

static void count(struct imp *im, int changed)
{
    if (changed)
        im->changes++;
}

/* 1 when KEY could be a misspelt key name (1 to 32 of a-z and _), so it is
 * safe to print: anything else may be token material in the wrong place. */
static int key_is_word(const char *key)
{
    size_t n = 0;

    for (; key[n]; n++)
        if (n >= 32 || !((key[n] >= 'a' && key[n] <= 'z') || key[n] == '_'))
            return 0;
    return n > 0;
}

/* Fails unless every key of OBJ is in ALLOWED (NULL-terminated). */
static enum store_rc check_keys(struct imp *im, json_t *obj, const char *path,
                                const char *const *allowed)
{
    const char *key;
    json_t *v;
    char p[PATH_MAX_LEN];
    size_t i;

    json_object_foreach(obj, key, v)
    {
        for (i = 0; allowed[i]; i++)
            if (strcmp(key, allowed[i]) == 0)
                break;
        if (!allowed[i] && !key_is_word(key))
            return fail(im, STORE_INVALID, path,
                        "an unknown key that is not a lowercase word (not shown)");
        if (!allowed[i]) {
            snprintf(p, sizeof(p), "%s.%s", path, key);
            return fail(im, STORE_INVALID, p, "unknown key");
        }
    }
    return STORE_OK;
}

/* Reads string KEY of OBJ as an identifier into OUT ("" when absent and not
 * REQUIRED). */
static enum store_rc get_id(struct imp *im, json_t *obj, const char *path, const char *key,
                            int required, char out[STORE_ID_MAX])
{
    json_t *v = json_object_get(obj, key);
    char p[PATH_MAX_LEN];

    snprintf(p, sizeof(p), "%s.%s", path, key);
    out[0] = '\0';
    if (!v || json_is_null(v))
        return required ? fail(im, STORE_INVALID, p, "missing") : STORE_OK;
    if (!json_is_string(v))
        return fail(im, STORE_INVALID, p, "expected a string");
    if (!store_id_valid(json_string_value(v)))
        return fail(im, STORE_INVALID, p,
                    "invalid identifier (1 to %d printable characters, no spaces)",
                    STORE_ID_MAX - 1);
    snprintf(out, STORE_ID_MAX, "%s", json_string_value(v));
    return STORE_OK;
}

/* Returns array KEY of OBJ in *OUT (NULL when absent). */
static enum store_rc get_array(struct imp *im, json_t *obj, const char *path, const char *key,
                               json_t **out)
{
    json_t *v = json_object_get(obj, key);
    char p[PATH_MAX_LEN];

    *out = NULL;
    if (!v || json_is_null(v))
        return STORE_OK;
    if (!json_is_array(v)) {
        if (path[0])
            snprintf(p, sizeof(p), "%s.%s", path, key);
        else
            snprintf(p, sizeof(p), "%s", key);
        return fail(im, STORE_INVALID, p, "expected an array");
    }
    *out = v;
    return STORE_OK;
}

/* Records that the file defines ID in SECTION; fails on a second definition. */
static enum store_rc define(struct imp *im, const char *section, const char *what, const char *id,
                            const char *path)
{
    char key[STORE_ID_MAX + 32];

    snprintf(key, sizeof(key), "%s/%s", section, id);
    if (json_object_get(im->seen, key))
        return fail(im, STORE_INVALID, path, "duplicate %s \"%s\"", what, id);
    json_object_set_new(im->seen, key, json_true());
    return STORE_OK;
}

/* Fails at PATH unless entity ID exists (OK / INVALID / FAULT). */
static enum store_rc need(struct imp *im, enum store_entity kind, const char *what, const char *id,
                          const char *path)
{
    int rc = im->s->ops->exists(im->s->impl, kind, id);

    if (rc == STORE_OK)
        return STORE_OK;
    if (rc == STORE_NOT_FOUND)
        return fail(im, STORE_INVALID, path, "no %s \"%s\"", what, id);
    return fail(im, STORE_FAULT, path, "the store failed");
}

/* Binds the plain-text tokens of array TOKENS (at PATH) to a subject. */
static enum store_rc put_tokens(struct imp *im, json_t *tokens, const char *path,
                                enum store_subject_kind kind, const char *subject_id)
{
    uint8_t hash[STORE_HASH_LEN];
    char p[PATH_MAX_LEN + 32];
    const char *text;
    size_t i, n;
    json_t *t;
    int rc, changed = 0;

    json_array_foreach(tokens, i, t)
    {
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if (!json_is_string(t))
            return fail(im, STORE_INVALID, p, "expected a string");
        text = json_string_value(t);
        n = json_string_length(t);
        if (strlen(text) != n || !auth_token_text_valid(text, n))
            return fail(im, STORE_INVALID, p, "a token is 1 to %d visible characters",
                        AUTH_TOKEN_MAX);
        if (auth_hash_token(text, n, hash) != 0)
            return fail(im, STORE_FAULT, p, "cannot hash the token");
        rc = im->s->ops->token_add(im->s->impl, hash, kind, subject_id, &changed);
        if (rc == STORE_CONFLICT)
            return fail(im, STORE_INVALID, p, "token is already bound to another subject");
        if (rc != STORE_OK)
            return write_failed(im, rc, p);
        count(im, changed);
    }
    return STORE_OK;
}

/* Writes the rows with only an id (channels, runners), and runner tokens. */
static enum store_rc import_plain(struct imp *im, json_t *root, const char *section,
                                  const char *what)
{
    static const char *const channel_keys[] = {"id", "members", NULL};
    static const char *const runner_keys[] = {"id", "tokens", NULL};
    int is_runner = strcmp(section, "runners") == 0;
    char path[64], id[STORE_ID_MAX];
    json_t *arr, *e, *tokens;
    size_t i;
    int rv, changed = 0;

    rv = get_array(im, root, "", section, &arr);
    if (rv != STORE_OK || !arr)
        return rv;
    json_array_foreach(arr, i, e)
    {
        snprintf(path, sizeof(path), "%s[%zu]", section, i);
        if (!json_is_object(e))
            return fail(im, STORE_INVALID, path, "expected an object");
        rv = check_keys(im, e, path, is_runner ? runner_keys : channel_keys);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "id", 1, id);
        if (rv == STORE_OK)
            rv = define(im, section, what, id, path);
        if (rv != STORE_OK)
            return rv;
        rv = is_runner ? im->s->ops->runner_put(im->s->impl, id, &changed)
                       : im->s->ops->channel_put(im->s->impl, id, &changed);
        if (rv != STORE_OK)
            return write_failed(im, rv, path);
        count(im, changed);
        if (is_runner) {
            rv = get_array(im, e, path, "tokens", &tokens);
            if (rv == STORE_OK && tokens) {
                snprintf(path, sizeof(path), "%s[%zu].tokens", section, i);
                rv = put_tokens(im, tokens, path, STORE_SUBJECT_RUNNER, id);
            }
            if (rv != STORE_OK)
                return rv;
        }
    }
    return STORE_OK;
}

static enum store_rc import_accounts(struct imp *im, json_t *root)
{
    static const char *const keys[] = {"id", "kind", "admin", "home_channel", "tokens", NULL};
    char path[64], p[PATH_MAX_LEN];
    struct store_account a;
    json_t *arr, *e, *v, *tokens;
    size_t i;
    int rv, changed = 0;

    rv = get_array(im, root, "", "accounts", &arr);
    if (rv != STORE_OK || !arr)
        return rv;
    json_array_foreach(arr, i, e)
    {
        snprintf(path, sizeof(path), "accounts[%zu]", i);
        if (!json_is_object(e))
            return fail(im, STORE_INVALID, path, "expected an object");
        memset(&a, 0, sizeof(a));
        rv = check_keys(im, e, path, keys);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "id", 1, a.id);
        if (rv == STORE_OK)
            rv = define(im, "accounts", "account", a.id, path);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "home_channel", 0, a.home_channel_id);
        if (rv != STORE_OK)
            return rv;
        v = json_object_get(e, "kind");
        snprintf(p, sizeof(p), "%s.kind", path);
        if (!v || json_is_null(v))
            a.kind = STORE_ACCOUNT_HUMAN;
        else if (json_is_string(v) && strcmp(json_string_value(v), "human") == 0)
            a.kind = STORE_ACCOUNT_HUMAN;
        else if (json_is_string(v) && strcmp(json_string_value(v), "agent") == 0)
            a.kind = STORE_ACCOUNT_AGENT;
        else
            return fail(im, STORE_INVALID, p, "expected \"human\" or \"agent\"");
        v = json_object_get(e, "admin");
        snprintf(p, sizeof(p), "%s.admin", path);
        if (v && !json_is_boolean(v))
            return fail(im, STORE_INVALID, p, "expected true or false");
        a.is_admin = v && json_is_true(v);
        snprintf(p, sizeof(p), "%s.home_channel", path);
        if (a.home_channel_id[0]) {
            if (a.kind != STORE_ACCOUNT_AGENT)
                return fail(im, STORE_INVALID, p, "only agent accounts have a home channel");
            rv = need(im, STORE_ENTITY_CHANNEL, "channel", a.home_channel_id, p);
            if (rv != STORE_OK)
                return rv;
        }
        rv = get_array(im, e, path, "tokens", &tokens);
        if (rv != STORE_OK)
            return rv;
        rv = im->s->ops->account_put(im->s->impl, &a, &changed);
        if (rv != STORE_OK)
            return write_failed(im, rv, path);
        count(im, changed);
        if (tokens) {
            snprintf(p, sizeof(p), "%s.tokens", path);
            rv = put_tokens(im, tokens, p, STORE_SUBJECT_ACCOUNT, a.id);
            if (rv != STORE_OK)
                return rv;
        }
    }
    return STORE_OK;
}

struct member_scan {
    json_t *wanted;  /* account id -> true, from the file */
    json_t *surplus; /* account ids stored but not wanted */
};

static int member_seen(const char *account_id, const char *channel_id, void *arg)
{
    struct member_scan *ms = arg;

    (void)channel_id;
    if (!json_object_get(ms->wanted, account_id))
        json_array_append_new(ms->surplus, json_string(account_id));
    return 0;
}

/* Makes channel ID's membership exactly the accounts in MEMBERS. */
static enum store_rc sync_members(struct imp *im, const char *id, json_t *members, const char *path)
{
    struct member_scan ms = {json_object(), json_array()};
    char p[PATH_MAX_LEN + 32], acct[STORE_ID_MAX];
    json_t *m;
    size_t i;
    int rv = STORE_OK, changed = 0;

    if (!ms.wanted || !ms.surplus) {
        rv = fail(im, STORE_FAULT, path, "out of memory");
        goto out;
    }
    json_array_foreach(members, i, m)
    {
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if (!json_is_string(m) || !store_id_valid(json_string_value(m))) {
            rv = fail(im, STORE_INVALID, p, "expected an account id");
            goto out;
        }
        snprintf(acct, sizeof(acct), "%s", json_string_value(m));
        rv = need(im, STORE_ENTITY_ACCOUNT, "account", acct, p);
        if (rv != STORE_OK)
            goto out;
        rv = im->s->ops->member_add(im->s->impl, acct, id, &changed);
        if (rv != STORE_OK) {
            rv = write_failed(im, rv, p);
            goto out;
        }
        count(im, changed);
        json_object_set_new(ms.wanted, acct, json_true());
    }
    rv = im->s->ops->member_list(im->s->impl, id, member_seen, &ms);
    if (rv != STORE_OK) {
        rv = write_failed(im, rv, path);
        goto out;
    }
    json_array_foreach(ms.surplus, i, m)
    {
        rv = im->s->ops->member_remove(im->s->impl, json_string_value(m), id, &changed);
        if (rv != STORE_OK) {
            rv = write_failed(im, rv, path);
            goto out;
        }
        count(im, changed);
    }

out:
    json_decref(ms.wanted);
    json_decref(ms.surplus);
    return rv;
}

static enum store_rc import_members(struct imp *im, json_t *root)
{
    char path[64];
    json_t *arr, *e, *members;
    size_t i;
    int rv;

    rv = get_array(im, root, "", "channels", &arr);
    if (rv != STORE_OK || !arr)
        return rv;
    json_array_foreach(arr, i, e)
    {
        snprintf(path, sizeof(path), "channels[%zu]", i);
        rv = get_array(im, e, path, "members", &members);
        if (rv != STORE_OK)
            return rv;
        if (!members)
            continue;
        snprintf(path, sizeof(path), "channels[%zu].members", i);
        rv = sync_members(im, json_string_value(json_object_get(e, "id")), members, path);
        if (rv != STORE_OK)
            return rv;
    }
    return STORE_OK;
}

static enum store_rc import_containers(struct imp *im, json_t *root)
{
    static const char *const keys[] = {"name", "agent_account", "runner", NULL};
    char path[64], p[PATH_MAX_LEN];
    struct store_container c;
    struct store_account a;
    json_t *arr, *e;
    size_t i;
    int rv, changed = 0;

    rv = get_array(im, root, "", "containers", &arr);
    if (rv != STORE_OK || !arr)
        return rv;
    json_array_foreach(arr, i, e)
    {
        snprintf(path, sizeof(path), "containers[%zu]", i);
        if (!json_is_object(e))
            return fail(im, STORE_INVALID, path, "expected an object");
        memset(&c, 0, sizeof(c));
        rv = check_keys(im, e, path, keys);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "name", 1, c.name);
        if (rv == STORE_OK)
            rv = define(im, "containers", "container", c.name, path);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "agent_account", 1, c.agent_account_id);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "runner", 1, c.runner_id);
        if (rv != STORE_OK)
            return rv;
        snprintf(p, sizeof(p), "%s.agent_account", path);
        rv = im->s->ops->account_get(im->s->impl, c.agent_account_id, &a);
        if (rv == STORE_NOT_FOUND)
            return fail(im, STORE_INVALID, p, "no account \"%s\"", c.agent_account_id);
        if (rv != STORE_OK)
            return fail(im, STORE_FAULT, p, "the store failed");
        if (a.kind != STORE_ACCOUNT_AGENT)
            return fail(im, STORE_INVALID, p, "account \"%s\" is not an agent", c.agent_account_id);
        snprintf(p, sizeof(p), "%s.runner", path);
        rv = need(im, STORE_ENTITY_RUNNER, "runner", c.runner_id, p);
        if (rv != STORE_OK)
            return rv;
        rv = im->s->ops->container_put(im->s->impl, &c, &changed);
        if (rv != STORE_OK)
            return write_failed(im, rv, path);
        count(im, changed);
    }
    return STORE_OK;
}

/* Creates one session, or checks that the stored one matches SPEC. */
static enum store_rc put_session(struct imp *im, const struct store_session_spec *spec,
                                 const char *path)
{
    struct store_session cur;
    int rv = store_session_get(im->s, spec->session_id, &cur);

    if (rv == STORE_OK) {
        if (strcmp(cur.container_name, spec->container_name) != 0 ||
            strcmp(cur.owner_account_id, spec->owner_account_id) != 0 ||
            strcmp(cur.provider, spec->provider) != 0 ||
            strcmp(cur.native_id, spec->native_id) != 0)
            return fail(im, STORE_INVALID, path,
                        "session \"%s\" exists with a different container, owner, provider or "
                        "native_id (remove it first)",
                        spec->session_id);
        return STORE_OK;
    }
    if (rv != STORE_NOT_FOUND)
        return fail(im, STORE_FAULT, path, "the store failed");
    rv = im->s->ops->session_create(im->s->impl, spec, NULL);
    if (rv == STORE_CONFLICT)
        return fail(im, STORE_INVALID, path, "provider and native_id are already taken");
    if (rv != STORE_OK)
        return write_failed(im, rv, path);
    count(im, 1);
    return STORE_OK;
}

static enum store_rc import_sessions(struct imp *im, json_t *root)
{
    static const char *const keys[] = {"id", "container", "owner", "provider", "native_id", NULL};
    char path[64], p[PATH_MAX_LEN];
    struct store_session_spec spec;
    json_t *arr, *e, *v;
    size_t i;
    int rv;

    rv = get_array(im, root, "", "sessions", &arr);
    if (rv != STORE_OK || !arr)
        return rv;
    json_array_foreach(arr, i, e)
    {
        snprintf(path, sizeof(path), "sessions[%zu]", i);
        if (!json_is_object(e))
            return fail(im, STORE_INVALID, path, "expected an object");
        memset(&spec, 0, sizeof(spec));
        rv = check_keys(im, e, path, keys);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "id", 1, spec.session_id);
        if (rv == STORE_OK)
            rv = define(im, "sessions", "session", spec.session_id, path);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "container", 1, spec.container_name);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "owner", 0, spec.owner_account_id);
        if (rv == STORE_OK)
            rv = get_id(im, e, path, "provider", 0, spec.provider);
        if (rv != STORE_OK)
            return rv;
        v = json_object_get(e, "native_id");
        snprintf(p, sizeof(p), "%s.native_id", path);
        if (v && !json_is_null(v)) {
            if (!json_is_string(v) || !store_native_id_valid(json_string_value(v)))
                return fail(im, STORE_INVALID, p, "expected a string of 1 to %d characters",
                            STORE_NATIVE_ID_MAX - 1);
            snprintf(spec.native_id, sizeof(spec.native_id), "%s", json_string_value(v));
        }
        snprintf(p, sizeof(p), "%s.container", path);
        rv = need(im, STORE_ENTITY_CONTAINER, "container", spec.container_name, p);
        if (rv == STORE_OK && spec.owner_account_id[0]) {
            snprintf(p, sizeof(p), "%s.owner", path);
            rv = need(im, STORE_ENTITY_ACCOUNT, "account", spec.owner_account_id, p);
        }
        if (rv == STORE_OK)
            rv = put_session(im, &spec, path);
        if (rv != STORE_OK)
            return rv;
    }
    return STORE_OK;
}

enum store_rc store_import_json(struct store *s, json_t *root, int *changes, char *err,
                                size_t errlen)
{
    static const char *const keys[] = {"accounts",   "channels", "runners",
                                       "containers", "sessions", NULL};
    struct imp im = {s, err, errlen, 0, NULL};
    int rv;

    err[0] = '\0';
    if (!json_is_object(root))
        return fail(&im, STORE_INVALID, "(root)", "expected an object");
    rv = check_keys(&im, root, "(root)", keys);
    if (rv != STORE_OK)
        return rv;
    im.seen = json_object();
    if (!im.seen)
        return fail(&im, STORE_FAULT, "(root)", "out of memory");
    rv = s->ops->begin(s->impl);
    if (rv != STORE_OK) {
        json_decref(im.seen);
        return fail(&im, rv == STORE_INVALID ? STORE_INVALID : STORE_FAULT, "(root)",
                    "cannot start a transaction (%s)", store_rc_name(rv));
    }
    rv = import_plain(&im, root, "channels", "channel");
    if (rv == STORE_OK)
        rv = import_plain(&im, root, "runners", "runner");
    if (rv == STORE_OK)
        rv = import_accounts(&im, root);
    if (rv == STORE_OK)
        rv = import_members(&im, root);
    if (rv == STORE_OK)
        rv = import_containers(&im, root);
    if (rv == STORE_OK)
        rv = import_sessions(&im, root);
    if (rv == STORE_OK) {
        rv = s->ops->commit(s->impl);
        if (rv != STORE_OK)
            fail(&im, rv, "(root)", "cannot commit (%s)", store_rc_name(rv));
    } else {
        s->ops->rollback(s->impl);
    }
    json_decref(im.seen);
    if (rv == STORE_OK && changes)
        *changes = im.changes;
    return rv;
}

/* What went wrong in a file jansson could not parse, in our own words:
 * jansson's text quotes the bytes "near" the error, which may be a token. */
static const char *parse_error_reason(const json_error_t *jerr)
{
    switch (json_error_code(jerr)) {
    case json_error_out_of_memory:
        return "out of memory";
    case json_error_stack_overflow:
        return "nested too deeply";
    case json_error_invalid_utf8:
        return "not valid UTF-8";
    case json_error_premature_end_of_input:
        return "unexpected end of the file";
    case json_error_end_of_input_expected:
        return "text after the JSON value";
    case json_error_null_character:
    case json_error_null_byte_in_key:
        return "a NUL character";
    case json_error_duplicate_key:
        return "a duplicate object key";
    case json_error_numeric_overflow:
        return "a number out of range";
    default:
        return "invalid JSON";
    }
}

enum store_rc store_import_file(struct store *s, const char *path, int *changes, char *err,
                                size_t errlen)
{
    json_error_t jerr;
    json_t *root;
    int rv;

    root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root && json_error_code(&jerr) == json_error_cannot_open_file) {
        snprintf(err, errlen, "%s", jerr.text); /* the path and errno: no content */
        return STORE_INVALID;
    }
    if (!root) {
        /* Line and column only: never the text, which may be a token. */
        if (jerr.line > 0)
            snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                     parse_error_reason(&jerr));
        else
            snprintf(err, errlen, "%s: %s", path, parse_error_reason(&jerr));
        return STORE_INVALID;
    }
    rv = store_import_json(s, root, changes, err, errlen);
    json_decref(root);
    return rv;
}
