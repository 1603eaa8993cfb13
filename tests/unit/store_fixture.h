/* store_fixture: helpers the store, gate, auth and admin suites share. */
#ifndef AGENTHUB_TEST_STORE_FIXTURE_H
#define AGENTHUB_TEST_STORE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The demo world (deploy/demo-world.json): admin; alice, bob, carol;
 * agent-1 (home chan-a: alice, bob, agent-1) in ctr-1 on runner-1 with
 * sess-1 owned by alice; agent-2 (home chan-b: carol, agent-2) in ctr-2 on
 * runner-2 with sess-2 owned by carol.  Tokens "t-<id>". */
extern const char STORE_FIXTURE_WORLD_JSON[];

enum store_fixture_backend {
    STORE_FIXTURE_SQLITE = 0,
    STORE_FIXTURE_POSTGRES = 1,
};

/* A fresh store: SQLite, a temporary directory and a database path inside
 * it; PostgreSQL, a fresh database on the shared test server, fx->db its
 * URI. */
struct store_fixture {
    char dir[256];
    char db[300];
    char dbname[64]; /* PostgreSQL only */
    enum store_fixture_backend backend;
    struct store *s;
};

/* Creates the directory and opens a SQLite store at fx->db; aborts on
 * failure. */
void store_fixture_open(struct store_fixture *fx);
/* The same for either backend. */
void store_fixture_open_backend(struct store_fixture *fx, enum store_fixture_backend backend);

/* Starts the PostgreSQL server the postgres fixtures share, once per
 * process (tests/pg_server.sh, stopped when the process that started it
 * exits), unless AGENTHUB_TEST_PG names one (postgres://USER@HOST:PORT).
 * Call it from an unchecked fixture, so every forked test inherits the
 * server.  Aborts when no server can be started: the suite must fail, not
 * skip. */
void store_fixture_pg_server(void);
/* postgres://USER@HOST:PORT of that server ("" before it started). */
const char *store_fixture_pg_base(void);
/* Runs SQL on fx's PostgreSQL database (FX NULL: the server's "postgres"
 * database) through a separate connection;
 * returns the first field of the first row in OUT (may be NULL), or -1 when
 * the statement failed. */
int store_fixture_pg_exec(const struct store_fixture *fx, const char *sql, char *out, size_t len);
/* Opens a second, independent handle on the same database. */
struct store *store_fixture_second_handle(const struct store_fixture *fx);
/* Another connection's write reaches a PostgreSQL node through a change
 * notification, a moment after its commit: MARK before that write and
 * SETTLE after it wait (at most 5 s, else abort) until fx->s has heard of
 * it.  No-ops on SQLite, where the next read sees it at once. */
uint64_t store_fixture_mark(const struct store_fixture *fx);
void store_fixture_settle(const struct store_fixture *fx, uint64_t mark);
/* Imports STORE_FIXTURE_WORLD_JSON; aborts on failure. */
void store_fixture_world(struct store_fixture *fx);
/* Closes the store and removes the directory. */
void store_fixture_close(struct store_fixture *fx);
/* Overwrites PATH's whole content (if it exists) with garbage bytes. */
void store_fixture_scribble(const char *path);
/* Returns 1 when the file PATH contains NEEDLE, else 0. */
int store_fixture_file_contains(const char *path, const char *needle);

#endif
