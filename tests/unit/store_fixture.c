/* store_fixture: see store_fixture.h. */
#include <fcntl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/import.h"
#include "store_fixture.h"

const char STORE_FIXTURE_WORLD_JSON[] =
    "{\"accounts\": ["
    "{\"id\": \"admin\", \"kind\": \"human\", \"admin\": true, \"tokens\": [\"t-admin\"]},"
    "{\"id\": \"alice\", \"kind\": \"human\", \"tokens\": [\"t-alice\"]},"
    "{\"id\": \"bob\", \"kind\": \"human\", \"tokens\": [\"t-bob\"]},"
    "{\"id\": \"carol\", \"kind\": \"human\", \"tokens\": [\"t-carol\"]},"
    "{\"id\": \"agent-1\", \"kind\": \"agent\", \"home_channel\": \"chan-a\", "
    "\"tokens\": [\"t-agent-1\"]},"
    "{\"id\": \"agent-2\", \"kind\": \"agent\", \"home_channel\": \"chan-b\", "
    "\"tokens\": [\"t-agent-2\"]}],"
    "\"channels\": [{\"id\": \"chan-a\", \"members\": [\"alice\", \"bob\", \"agent-1\"]},"
    "{\"id\": \"chan-b\", \"members\": [\"carol\", \"agent-2\"]}],"
    "\"runners\": [{\"id\": \"runner-1\", \"tokens\": [\"t-runner-1\"]},"
    "{\"id\": \"runner-2\", \"tokens\": [\"t-runner-2\"]}],"
    "\"containers\": [{\"name\": \"ctr-1\", \"agent_account\": \"agent-1\", \"runner\": "
    "\"runner-1\"},"
    "{\"name\": \"ctr-2\", \"agent_account\": \"agent-2\", \"runner\": \"runner-2\"}],"
    "\"sessions\": [{\"id\": \"sess-1\", \"container\": \"ctr-1\", \"owner\": \"alice\"},"
    "{\"id\": \"sess-2\", \"container\": \"ctr-2\", \"owner\": \"carol\"}]}";

static char pg_base[256];
static char pg_dir[256];
static char pg_script[512];
static pid_t pg_owner;

/* tests/pg_server.sh from the repository root (where make runs the
 * runner), else next to the runner (BUILD/tests/unit_tests). */
static const char *pg_script_path(void)
{
    char exe[400];
    ssize_t n;

    if (pg_script[0])
        return pg_script;
    snprintf(pg_script, sizeof(pg_script), "tests/pg_server.sh");
    if (access(pg_script, X_OK) == 0)
        return pg_script;
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        char *slash;

        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(pg_script, sizeof(pg_script), "%s/../../tests/pg_server.sh", exe);
    }
    return pg_script;
}

/* atexit: stops the server, in the process that started it only (forked
 * tests inherit the handler). */
static void pg_server_stop(void)
{
    char cmd[900];

    if (pg_owner != getpid() || !pg_dir[0])
        return;
    snprintf(cmd, sizeof(cmd), "'%s' stop '%s'", pg_script_path(), pg_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fixture: could not stop the PostgreSQL server in %s\n", pg_dir);
    pg_dir[0] = '\0';
}

void store_fixture_pg_server(void)
{
    const char *given = getenv("AGENTHUB_TEST_PG");
    char cmd[900];
    FILE *p;
    size_t n;

    if (pg_base[0])
        return;
    if (given && given[0]) {
        snprintf(pg_base, sizeof(pg_base), "%s", given);
        return;
    }
    snprintf(pg_dir, sizeof(pg_dir), "/tmp/agenthub-pg-XXXXXX");
    if (!mkdtemp(pg_dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(cmd, sizeof(cmd), "'%s' start '%s'", pg_script_path(), pg_dir);
    p = popen(cmd, "r");
    if (!p || !fgets(pg_base, sizeof(pg_base), p) || pclose(p) != 0) {
        fprintf(stderr, "fixture: cannot start PostgreSQL (tests/pg_server.sh start %s)\n", pg_dir);
        abort();
    }
    n = strlen(pg_base);
    while (n > 0 && (pg_base[n - 1] == '\n' || pg_base[n - 1] == ' '))
        pg_base[--n] = '\0';
    pg_owner = getpid();
    atexit(pg_server_stop);
}

const char *store_fixture_pg_base(void)
{
    return pg_base;
}

/* Runs SQL on database DBNAME of the shared server; see
 * store_fixture_pg_exec. */
static int pg_exec_on(const char *dbname, const char *sql, char *out, size_t len)
{
    char uri[600];
    PGconn *c;
    PGresult *r;
    int rv = -1;

    snprintf(uri, sizeof(uri), "%s/%s", pg_base, dbname);
    c = PQconnectdb(uri);
    if (PQstatus(c) == CONNECTION_OK) {
        r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK) {
            rv = 0;
            if (out && len)
                snprintf(out, len, "%s",
                         PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "");
        } else {
            fprintf(stderr, "fixture: %s", PQerrorMessage(c));
        }
        PQclear(r);
    } else {
        fprintf(stderr, "fixture: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    return rv;
}

int store_fixture_pg_exec(const struct store_fixture *fx, const char *sql, char *out, size_t len)
{
    return pg_exec_on(fx ? fx->dbname : "postgres", sql, out, len);
}

void store_fixture_open_backend(struct store_fixture *fx, enum store_fixture_backend backend)
{
    static unsigned counter;
    char err[256], sql[128];

    if (backend == STORE_FIXTURE_SQLITE) {
        store_fixture_open(fx);
        return;
    }
    memset(fx, 0, sizeof(*fx));
    fx->backend = STORE_FIXTURE_POSTGRES;
    store_fixture_pg_server();
    snprintf(fx->dbname, sizeof(fx->dbname), "t_%ld_%u", (long)getpid(), counter++);
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", fx->dbname);
    if (pg_exec_on("postgres", sql, NULL, 0) != 0)
        abort();
    if (snprintf(fx->db, sizeof(fx->db), "%.200s/%.60s", pg_base, fx->dbname) >=
        (int)sizeof(fx->db))
        abort();
    if (store_open(fx->db, &fx->s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: %s\n", err);
        abort();
    }
}

void store_fixture_open(struct store_fixture *fx)
{
    char err[256];

    memset(fx, 0, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/agenthub-test-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(fx->db, sizeof(fx->db), "%s/agenthub.db", fx->dir);
    if (sqlite_store_open(fx->db, &fx->s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: %s\n", err);
        abort();
    }
}

struct store *store_fixture_second_handle(const struct store_fixture *fx)
{
    struct store *s = NULL;
    char err[256];

    if (store_open(fx->db, &s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: %s\n", err);
        abort();
    }
    return s;
}

uint64_t store_fixture_mark(const struct store_fixture *fx)
{
    uint64_t g = 0;

    if (fx->backend == STORE_FIXTURE_POSTGRES &&
        fx->s->ops->change_generation(fx->s->impl, &g) != STORE_OK)
        abort();
    return g;
}

void store_fixture_settle(const struct store_fixture *fx, uint64_t mark)
{
    uint64_t g = mark;
    int i;

    if (fx->backend != STORE_FIXTURE_POSTGRES)
        return;
    for (i = 0; i < 1000 && g == mark; i++) {
        if (fx->s->ops->change_generation(fx->s->impl, &g) != STORE_OK)
            abort();
        if (g == mark)
            usleep(5000);
    }
    if (g == mark) {
        fprintf(stderr, "fixture: no change notification within 5 s\n");
        abort();
    }
}

void store_fixture_world(struct store_fixture *fx)
{
    json_error_t jerr;
    json_t *root = json_loads(STORE_FIXTURE_WORLD_JSON, 0, &jerr);
    char err[512];

    if (!root) {
        fprintf(stderr, "fixture: bad world JSON: %s\n", jerr.text);
        abort();
    }
    if (store_import_json(fx->s, root, NULL, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: import: %s\n", err);
        abort();
    }
    json_decref(root);
}

void store_fixture_close(struct store_fixture *fx)
{
    char path[400];
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    size_t i;

    store_close(fx->s);
    fx->s = NULL;
    if (fx->backend == STORE_FIXTURE_POSTGRES) {
        snprintf(path, sizeof(path), "DROP DATABASE IF EXISTS %s WITH (FORCE)", fx->dbname);
        (void)pg_exec_on("postgres", path, NULL, 0);
        return;
    }
    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", fx->db, suffixes[i]);
        unlink(path);
    }
    rmdir(fx->dir);
}

void store_fixture_scribble(const char *path)
{
    struct stat sb;
    char buf[4096];
    off_t off;
    int fd = open(path, O_WRONLY);

    if (fd < 0)
        return;
    if (fstat(fd, &sb) == 0) {
        memset(buf, 0xA5, sizeof(buf));
        for (off = 0; off < sb.st_size; off += (off_t)sizeof(buf))
            if (pwrite(fd, buf, sizeof(buf), off) < 0)
                break;
    }
    close(fd);
}

int store_fixture_file_contains(const char *path, const char *needle)
{
    size_t n = strlen(needle), len, i;
    char *data;
    FILE *f = fopen(path, "rb");
    long sz;
    int found = 0;

    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc(sz > 0 ? (size_t)sz : 1);
    len = data ? fread(data, 1, (size_t)sz, f) : 0;
    fclose(f);
    for (i = 0; n > 0 && i + n <= len && !found; i++)
        found = memcmp(data + i, needle, n) == 0;
    free(data);
    return found;
}
