/* agenthub admin: provision the ownership model in the store.
 *
 *   agenthub admin --db PATH COMMAND [ARGS...]
 *
 * Exit status: 0 success, 1 a store error (refused, absent, in use,
 * fault), 2 usage (bad arguments, a bad import file).  Tokens are printed
 * once by `token issue` and never logged; the store keeps only SHA-256. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/admin.h"
#include "cli/cli.h"
#include "store/auth.h"
#include "store/import.h"

static const char admin_usage[] =
    "usage: agenthub admin --db PATH|URI COMMAND [ARGS...]\n"
    "\n"
    "--db names the store: a SQLite file path, or a PostgreSQL connection URI\n"
    "(postgres://USER@HOST:PORT/DBNAME?...) for a cluster's shared store.\n"
    "\n"
    "commands:\n"
    "  init                          create the database or bring its schema up to date\n"
    "  import FILE.json              provision accounts, channels, runners, containers and\n"
    "                                sessions declaratively (idempotent, one transaction)\n"
    "  token issue|revoke|list       bearer tokens (stored only as SHA-256)\n"
    "  accounts add|remove|list      human and agent accounts\n"
    "  channels add|remove|list      channels\n"
    "  members add|remove|list       channel memberships\n"
    "  runners add|remove|list       Runners\n"
    "  containers add|remove|list    containers (an agent account on a Runner)\n"
    "  sessions add|remove|close|list  agent sessions\n"
    "\n"
    "Lists take --json.  Run 'agenthub admin COMMAND --help' for a command's flags.\n"
    "Exit status: 0 ok, 1 store error, 2 usage.\n";

static const char init_usage[] = "usage: agenthub admin --db PATH init\n"
                                 "Creates the database, or applies pending schema migrations.\n";

static const char import_usage[] =
    "usage: agenthub admin --db PATH import FILE.json\n"
    "Makes the store match FILE (the format: docs/provisioning.md): accounts,\n"
    "channels, runners and containers are created or updated, a channel's \"members\"\n"
    "become its exact membership, plain-text tokens are stored as SHA-256 only,\n"
    "sessions are created when absent.  Rows the file does not name are kept; a\n"
    "revoked token stays revoked.  A bad file is refused with the JSON path of the\n"
    "problem (exit 2) and nothing is written.\n";

static const char token_usage[] =
    "usage: agenthub admin --db PATH token issue --account ID | --runner ID\n"
    "       agenthub admin --db PATH token revoke TOKEN | --hash HEX_PREFIX\n"
    "                                       | --account ID | --runner ID\n"
    "       agenthub admin --db PATH token list [--json]\n"
    "issue prints a new token once (32 random bytes, base64url); only its SHA-256 is\n"
    "stored.  revoke takes the token itself, the start of its hash as shown by\n"
    "list (at least 8 hex digits), or every token of an account or Runner.\n"
    "An admin account can issue and revoke tokens over the public door too\n"
    "(CompassService IssueToken and RevokeToken).\n";

static const struct {
    const char *flag;
    size_t off;
} value_flags[] = {
    {"--kind", offsetof(struct admin_opts, kind)},
    {"--home-channel", offsetof(struct admin_opts, home_channel)},
    {"--agent", offsetof(struct admin_opts, agent)},
    {"--runner", offsetof(struct admin_opts, runner)},
    {"--container", offsetof(struct admin_opts, container)},
    {"--owner", offsetof(struct admin_opts, owner)},
    {"--provider", offsetof(struct admin_opts, provider)},
    {"--native-id", offsetof(struct admin_opts, native_id)},
    {"--channel", offsetof(struct admin_opts, channel)},
    {"--account", offsetof(struct admin_opts, account)},
    {"--hash", offsetof(struct admin_opts, hash)},
};

int admin_parse(int argc, char **argv, struct admin_opts *o)
{
    int i;
    size_t k;

    memset(o, 0, sizeof(*o));
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(a, "--admin") == 0) {
            o->admin = 1;
            continue;
        }
        if (strcmp(a, "--open") == 0) {
            o->open_only = 1;
            continue;
        }
        if (strncmp(a, "--", 2) == 0) {
            for (k = 0; k < sizeof(value_flags) / sizeof(value_flags[0]); k++)
                if (strcmp(a, value_flags[k].flag) == 0)
                    break;
            if (k == sizeof(value_flags) / sizeof(value_flags[0])) {
                fprintf(stderr, "agenthub admin: unknown flag '%s'\n", a);
                return -1;
            }
            if (i + 1 >= argc) {
                fprintf(stderr, "agenthub admin: %s needs a value\n", a);
                return -1;
            }
            *(const char **)((char *)o + value_flags[k].off) = argv[++i];
            continue;
        }
        if (o->npos == (int)(sizeof(o->pos) / sizeof(o->pos[0]))) {
            fprintf(stderr, "agenthub admin: too many arguments\n");
            return -1;
        }
        o->pos[o->npos++] = a;
    }
    return 0;
}

int admin_report(enum store_rc rc, const char *what)
{
    switch (rc) {
    case STORE_OK:
        return ADMIN_OK;
    case STORE_NOT_FOUND:
        fprintf(stderr, "agenthub admin: %s: not found\n", what);
        return ADMIN_STORE;
    case STORE_CONFLICT:
        fprintf(stderr, "agenthub admin: %s: conflict (already taken, or still referenced)\n",
                what);
        return ADMIN_STORE;
    case STORE_INVALID:
        fprintf(stderr,
                "agenthub admin: %s: refused (an invalid id, or a reference to "
                "something that does not exist)\n",
                what);
        return ADMIN_USAGE;
    case STORE_FAULT:
        break;
    }
    fprintf(stderr, "agenthub admin: %s: the store failed; retry\n", what);
    return ADMIN_STORE;
}

static int cmd_import(struct store *s, const struct admin_opts *o)
{
    char err[512];
    int rc, changes = 0;

    if (o->npos != 1) {
        fputs(import_usage, stderr);
        return ADMIN_USAGE;
    }
    rc = store_import_file(s, o->pos[0], &changes, err, sizeof(err));
    if (rc == STORE_OK) {
        printf("imported %s: %d change%s\n", o->pos[0], changes, changes == 1 ? "" : "s");
        return ADMIN_OK;
    }
    fprintf(stderr, "agenthub admin: import: %s\n", err);
    return rc == STORE_INVALID ? ADMIN_USAGE : ADMIN_STORE;
}

/* --- tokens --- */

static void hex(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Which subject --account / --runner names; -1 unless exactly one. */
static int token_subject(const struct admin_opts *o, enum store_subject_kind *kind, const char **id)
{
    if (!!o->account == !!o->runner)
        return -1;
    *kind = o->account ? STORE_SUBJECT_ACCOUNT : STORE_SUBJECT_RUNNER;
    *id = o->account ? o->account : o->runner;
    return 0;
}

static int token_issue(struct store *s, const struct admin_opts *o)
{
    char token[AUTH_TOKEN_TEXT_LEN + 1];
    uint8_t hash[STORE_HASH_LEN];
    enum store_subject_kind kind;
    const char *id;
    int rc;

    if (o->npos != 1 || token_subject(o, &kind, &id) != 0) {
        fputs(token_usage, stderr);
        return ADMIN_USAGE;
    }
    /* The same path as the IssueToken call (auth.h). */
    rc = auth_issue_token(s, kind, id, token, hash);
    if (rc != STORE_OK)
        return admin_report(rc, kind == STORE_SUBJECT_ACCOUNT ? "token issue: account"
                                                              : "token issue: runner");
    printf("%s\n", token);
    auth_forget(token, sizeof(token));
    if (isatty(STDOUT_FILENO))
        fputs("(shown once: only its SHA-256 is stored)\n", stderr);
    return ADMIN_OK;
}

struct hash_match {
    const char *prefix;
    uint8_t hash[STORE_HASH_LEN];
    int matches;
};

static int match_hash(const struct store_token_info *t, void *arg)
{
    struct hash_match *m = arg;
    char h[2 * STORE_HASH_LEN + 1];

    hex(t->hash, STORE_HASH_LEN, h);
    if (strncasecmp(h, m->prefix, strlen(m->prefix)) == 0) {
        memcpy(m->hash, t->hash, STORE_HASH_LEN);
        m->matches++;
    }
    return 0;
}

static int token_revoke(struct store *s, const struct admin_opts *o)
{
    uint8_t hash[STORE_HASH_LEN];
    enum store_subject_kind kind = STORE_SUBJECT_NONE;
    const char *id = NULL;
    int rc, changed = 0, ways;

    ways = (o->npos == 2) + !!o->hash + !!o->account + !!o->runner;
    if (o->npos > 2 || ways != 1) {
        fputs(token_usage, stderr);
        return ADMIN_USAGE;
    }
    if (o->npos == 2) {
        struct store_subject was;
        /* The same path as the RevokeToken call (auth.h); text that is
         * not a token's shape was never issued. */
        rc = auth_revoke_token(s, o->pos[1], strlen(o->pos[1]), hash, &was, &changed);
        return admin_report(rc == STORE_INVALID ? STORE_NOT_FOUND : rc, "token revoke: token");
    }
    if (o->hash) {
        struct hash_match m = {o->hash, {0}, 0};
        size_t n = strlen(o->hash);
        if (n < 8 || n > 2 * STORE_HASH_LEN || strspn(o->hash, "0123456789abcdefABCDEF") != n) {
            fprintf(stderr, "agenthub admin: token revoke: --hash takes 8 to 64 hex digits\n");
            return ADMIN_USAGE;
        }
        rc = s->ops->token_list(s->impl, match_hash, &m);
        if (rc != STORE_OK)
            return admin_report(rc, "token revoke");
        if (m.matches != 1) {
            fprintf(stderr, "agenthub admin: token revoke: %s\n",
                    m.matches ? "that hash prefix matches several tokens"
                              : "no token has that hash");
            return ADMIN_STORE;
        }
        return admin_report(s->ops->token_revoke(s->impl, m.hash, NULL), "token revoke");
    }
    if (token_subject(o, &kind, &id) != 0) {
        fputs(token_usage, stderr);
        return ADMIN_USAGE;
    }
    rc = s->ops->token_revoke_subject(s->impl, kind, id, &changed);
    return admin_report(rc, kind == STORE_SUBJECT_ACCOUNT ? "token revoke: account"
                                                          : "token revoke: runner");
}

static int print_token(const struct store_token_info *t, void *arg)
{
    json_t *arr = arg;
    char h[2 * STORE_HASH_LEN + 1];
    const char *kind = t->kind == STORE_SUBJECT_ACCOUNT ? "account" : "runner";

    hex(t->hash, STORE_HASH_LEN, h);
    h[16] = '\0'; /* a prefix identifies it; the full hash is not needed */
    if (arr)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:I}", "hash", h, "kind", kind,
                                             "subject", t->subject_id, "revoked", t->revoked,
                                             "created_at_ms", (json_int_t)t->created_at_ms));
    else
        printf("%s\t%s\t%s\t%s\n", h, kind, t->subject_id, t->revoked ? "revoked" : "live");
    return 0;
}

static int token_main(struct store *s, const struct admin_opts *o)
{
    const char *verb = o->npos > 0 ? o->pos[0] : "";
    json_t *arr;
    int rc;

    if (strcmp(verb, "issue") == 0)
        return token_issue(s, o);
    if (strcmp(verb, "revoke") == 0)
        return token_revoke(s, o);
    if (strcmp(verb, "list") == 0 && o->npos == 1) {
        arr = o->json ? json_array() : NULL;
        rc = s->ops->token_list(s->impl, print_token, arr);
        if (rc == STORE_OK && arr) {
            json_dumpf(arr, stdout, JSON_INDENT(2));
            fputc('\n', stdout);
        }
        json_decref(arr);
        return admin_report(rc, "token list");
    }
    fputs(token_usage, stderr);
    return ADMIN_USAGE;
}

/* Maps a singular or plural group name to its plural; NULL if unknown. */
static const char *row_group(const char *name)
{
    static const char *const groups[] = {"accounts", "channels",   "members",
                                         "runners",  "containers", "sessions"};
    size_t i, n;

    for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        n = strlen(groups[i]);
        if (strcmp(name, groups[i]) == 0 ||
            (strlen(name) == n - 1 && strncmp(name, groups[i], n - 1) == 0))
            return groups[i];
    }
    return NULL;
}

int cli_admin_main(int argc, char **argv)
{
    struct admin_opts o;
    const char *db = NULL, *cmd, *group, *usage;
    struct store *s = NULL;
    char err[512];
    int i, rv;

    for (i = 1; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(admin_usage, stdout);
            return ADMIN_OK;
        }
        if (strcmp(argv[i], "--db") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agenthub admin: --db needs a path or a postgres:// URI\n");
                return ADMIN_USAGE;
            }
            db = argv[++i];
            continue;
        }
        fprintf(stderr, "agenthub admin: unknown flag '%s'\n", argv[i]);
        fputs(admin_usage, stderr);
        return ADMIN_USAGE;
    }
    if (i >= argc) {
        fputs(admin_usage, stderr);
        return ADMIN_USAGE;
    }
    cmd = argv[i++];
    group = row_group(cmd);
    if (strcmp(cmd, "init") == 0)
        usage = init_usage;
    else if (strcmp(cmd, "import") == 0)
        usage = import_usage;
    else if (strcmp(cmd, "token") == 0 || strcmp(cmd, "tokens") == 0)
        usage = token_usage;
    else if (group)
        usage = admin_rows_usage(group);
    else {
        fprintf(stderr, "agenthub admin: unknown command '%s'\n", cmd);
        fputs(admin_usage, stderr);
        return ADMIN_USAGE;
    }
    if (admin_parse(argc - i, argv + i, &o) != 0) {
        fputs(usage, stderr);
        return ADMIN_USAGE;
    }
    if (o.help) {
        fputs(usage, stdout);
        return ADMIN_OK;
    }
    if (!db) {
        fprintf(stderr, "agenthub admin: --db PATH is required\n");
        return ADMIN_USAGE;
    }
    /* Only init and import may create a database: a typo in --db for any
     * other command should not silently make an empty one. */
    if (strcmp(cmd, "init") != 0 && strcmp(cmd, "import") != 0 && !store_target_is_postgres(db) &&
        access(db, F_OK) != 0) {
        fprintf(stderr, "agenthub admin: no database at %s (run 'agenthub admin --db %s init')\n",
                db, db);
        return ADMIN_STORE;
    }
    if (store_open(db, &s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "agenthub admin: %s\n", err);
        return ADMIN_STORE;
    }
    /* A person at a terminal can wait for a running server's write. */
    store_set_timeout(s, 5000);
    if (strcmp(cmd, "init") == 0) {
        rv = o.npos == 0 ? ADMIN_OK : ADMIN_USAGE;
        if (rv != ADMIN_OK)
            fputs(init_usage, stderr);
    } else if (strcmp(cmd, "import") == 0) {
        rv = cmd_import(s, &o);
    } else if (!group) {
        rv = token_main(s, &o);
    } else {
        rv = admin_rows_main(s, group, &o);
    }
    store_close(s);
    return rv;
}
