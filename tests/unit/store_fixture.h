/* store_fixture: helpers the store, gate, auth and admin suites share. */
#ifndef AGENTHUB_TEST_STORE_FIXTURE_H
#define AGENTHUB_TEST_STORE_FIXTURE_H

#include <stddef.h>

#include "store/store.h"

/* The demo world (deploy/demo-world.json): admin; alice, bob, carol;
 * agent-1 (home chan-a: alice, bob, agent-1) in ctr-1 on runner-1 with
 * sess-1 owned by alice; agent-2 (home chan-b: carol, agent-2) in ctr-2 on
 * runner-2 with sess-2 owned by carol.  Tokens "t-<id>". */
extern const char STORE_FIXTURE_WORLD_JSON[];

/* A fresh temporary directory and a database path inside it. */
struct store_fixture {
    char dir[256];
    char db[300];
    struct store *s;
};

/* Creates the directory and opens a store at fx->db; aborts on failure. */
void store_fixture_open(struct store_fixture *fx);
/* Opens a second, independent handle on the same database. */
struct store *store_fixture_second_handle(const struct store_fixture *fx);
/* Imports STORE_FIXTURE_WORLD_JSON; aborts on failure. */
void store_fixture_world(struct store_fixture *fx);
/* Closes the store and removes the directory. */
void store_fixture_close(struct store_fixture *fx);
/* Overwrites PATH's whole content (if it exists) with garbage bytes. */
void store_fixture_scribble(const char *path);
/* Returns 1 when the file PATH contains NEEDLE, else 0. */
int store_fixture_file_contains(const char *path, const char *needle);

#endif
