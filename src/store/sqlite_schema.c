/* sqlite_schema: the SQLite backend's schema, migrations and statements.
 *
 * Migrations are keyed on PRAGMA user_version: migration N takes the schema
 * from version N-1 to N.  Each runs in the same transaction as the bump of
 * user_version, so a crash leaves either the old or the new schema. */
#include <stdio.h>
#include <string.h>

#include "store/sqlite_internal.h"

/* Version 1: the ownership model.  Kinds and flags are CHECKed so a stray
 * write through the sqlite3 shell cannot make the gate read nonsense. */
static const char migration_1[] =
    "CREATE TABLE channels ("
    "  id TEXT PRIMARY KEY NOT NULL"
    ");"
    "CREATE TABLE accounts ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind IN ('human', 'agent')),"
    "  is_admin INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),"
    "  home_channel_id TEXT REFERENCES channels(id) DEFERRABLE INITIALLY DEFERRED,"
    "  CHECK (kind = 'agent' OR home_channel_id IS NULL)"
    ");"
    "CREATE INDEX accounts_home ON accounts(home_channel_id);"
    "CREATE TABLE runners ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  last_seq INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE TABLE tokens ("
    "  hash BLOB PRIMARY KEY NOT NULL CHECK (length(hash) = 32),"
    "  account_id TEXT REFERENCES accounts(id) ON DELETE CASCADE,"
    "  runner_id TEXT REFERENCES runners(id) ON DELETE CASCADE,"
    "  revoked INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),"
    "  created_at INTEGER NOT NULL,"
    "  CHECK ((account_id IS NULL) <> (runner_id IS NULL))"
    ");"
    "CREATE INDEX tokens_account ON tokens(account_id);"
    "CREATE INDEX tokens_runner ON tokens(runner_id);"
    "CREATE TABLE memberships ("
    "  account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,"
    "  channel_id TEXT NOT NULL REFERENCES channels(id) ON DELETE CASCADE,"
    "  PRIMARY KEY (account_id, channel_id)"
    ") WITHOUT ROWID;"
    "CREATE INDEX memberships_channel ON memberships(channel_id);"
    "CREATE TABLE containers ("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  agent_account_id TEXT NOT NULL REFERENCES accounts(id),"
    "  runner_id TEXT NOT NULL REFERENCES runners(id)"
    ");"
    "CREATE INDEX containers_account ON containers(agent_account_id);"
    "CREATE INDEX containers_runner ON containers(runner_id);"
    /* AUTOINCREMENT: a resource id is never reused, even after deletion. */
    "CREATE TABLE resources ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  kind INTEGER NOT NULL CHECK (kind IN (0, 1)),"
    "  container_name TEXT NOT NULL REFERENCES containers(name) ON DELETE CASCADE,"
    "  parent_id INTEGER REFERENCES resources(id) ON DELETE CASCADE,"
    "  closed INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX resources_container ON resources(container_name);"
    "CREATE INDEX resources_parent ON resources(parent_id);"
    /* native_id NULL when absent: NULLs never collide in UNIQUE. */
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  container_name TEXT NOT NULL REFERENCES containers(name),"
    "  owner_account_id TEXT REFERENCES accounts(id),"
    "  provider TEXT NOT NULL DEFAULT '',"
    "  native_id TEXT,"
    "  resource_id INTEGER UNIQUE REFERENCES resources(id) ON DELETE SET NULL,"
    "  closed INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (provider, native_id)"
    ");"
    "CREATE INDEX sessions_container ON sessions(container_name);"
    "CREATE INDEX sessions_owner ON sessions(owner_account_id);";

static const char *const migrations[] = {migration_1};
#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

/* The ownership chain every session read resolves in one statement. */
#define SESSION_COLUMNS                                                                            \
    "SELECT s.id, s.container_name, c.agent_account_id, coalesce(a.home_channel_id, ''), "         \
    "c.runner_id, coalesce(s.owner_account_id, ''), s.provider, coalesce(s.native_id, ''), "       \
    "coalesce(s.resource_id, 0), s.closed, s.created_at "                                          \
    "FROM sessions s JOIN containers c ON c.name = s.container_name "                              \
    "JOIN accounts a ON a.id = c.agent_account_id "

static const char *const sql_text[SQ_COUNT] = {
    [SQ_TOKEN_RESOLVE] = "SELECT t.hash, t.account_id, t.runner_id, coalesce(a.is_admin, 0) "
                         "FROM tokens t LEFT JOIN accounts a ON a.id = t.account_id "
                         "WHERE t.hash = ?1 AND t.revoked = 0",
    [SQ_TOKEN_ADD] = "INSERT INTO tokens (hash, account_id, runner_id, revoked, created_at) "
                     "VALUES (?1, ?2, ?3, 0, ?4) ON CONFLICT (hash) DO NOTHING",
    [SQ_TOKEN_SUBJECT] = "SELECT account_id, runner_id FROM tokens WHERE hash = ?1",
    [SQ_TOKEN_REVOKE] = "UPDATE tokens SET revoked = 1 WHERE hash = ?1 AND revoked = 0",
    [SQ_TOKEN_REVOKE_ACCOUNT] =
        "UPDATE tokens SET revoked = 1 WHERE account_id = ?1 AND revoked = 0",
    [SQ_TOKEN_REVOKE_RUNNER] = "UPDATE tokens SET revoked = 1 WHERE runner_id = ?1 AND revoked = 0",
    [SQ_TOKEN_LIST] = "SELECT hash, account_id, runner_id, revoked, created_at FROM tokens "
                      "ORDER BY coalesce(account_id, runner_id), created_at, hash",
    [SQ_SESSION_GET] = SESSION_COLUMNS "WHERE s.id = ?1",
    [SQ_SESSION_FIND_NATIVE] = SESSION_COLUMNS "WHERE s.provider = ?1 AND s.native_id = ?2",
    [SQ_SESSION_LIST] = SESSION_COLUMNS "WHERE (?1 = '' OR c.runner_id = ?1) "
                                        "AND (?2 = '' OR s.container_name = ?2) "
                                        "AND (?3 = 0 OR s.closed = 0) ORDER BY s.id",
    [SQ_SESSION_RUNNER] = "SELECT c.runner_id FROM sessions s "
                          "JOIN containers c ON c.name = s.container_name WHERE s.id = ?1",
    [SQ_MEMBER_CHECK] = "SELECT 1 FROM memberships WHERE account_id = ?1 AND channel_id = ?2",
    [SQ_MEMBER_CHANNELS] = "SELECT channel_id FROM memberships WHERE account_id = ?1 "
                           "ORDER BY channel_id LIMIT ?2",
    [SQ_RESOURCE_GET] = "SELECT r.id, r.kind, coalesce(r.parent_id, 0), r.container_name, "
                        "c.agent_account_id, c.runner_id, coalesce(s.id, ''), r.closed "
                        "FROM resources r JOIN containers c ON c.name = r.container_name "
                        "LEFT JOIN sessions s ON s.resource_id = r.id WHERE r.id = ?1",
    [SQ_SESSION_INSERT] =
        "INSERT INTO sessions (id, container_name, owner_account_id, provider, "
        "native_id, resource_id, closed, created_at) "
        "VALUES (?1, ?2, nullif(?3, ''), ?4, nullif(?5, ''), nullif(?6, 0), 0, ?7)",
    [SQ_SESSION_CLOSE] = "UPDATE sessions SET closed = 1 WHERE id = ?1",
    [SQ_SESSION_CLOSE_RESOURCE] = "UPDATE resources SET closed = 1 "
                                  "WHERE id = (SELECT resource_id FROM sessions WHERE id = ?1)",
    [SQ_SESSION_REOPEN] = "UPDATE sessions SET closed = 0 WHERE id = ?1",
    [SQ_SESSION_REOPEN_RESOURCE] = "UPDATE resources SET closed = 0 "
                                   "WHERE id = (SELECT resource_id FROM sessions WHERE id = ?1)",
    [SQ_RESOURCE_INSERT] = "INSERT INTO resources (kind, container_name, parent_id, closed) "
                           "VALUES (?1, ?2, nullif(?3, 0), 0)",
    [SQ_RESOURCE_CLOSE] = "UPDATE resources SET closed = 1 WHERE id = ?1",
    [SQ_RESOURCE_CLOSE_SESSION] = "UPDATE sessions SET closed = 1 WHERE resource_id = ?1",
    [SQ_RUNNER_SEQ_GET] = "SELECT last_seq FROM runners WHERE id = ?1",
    [SQ_RUNNER_SEQ_SET] = "UPDATE runners SET last_seq = ?2 WHERE id = ?1",
    [SQ_CONTAINER_LIST] = "SELECT name, agent_account_id, runner_id FROM containers "
                          "WHERE ?1 = '' OR runner_id = ?1 ORDER BY name",
    /* The WHERE on DO UPDATE makes an identical put change nothing, so
     * sqlite3_changes() tells an import whether it altered anything. */
    [SQ_ACCOUNT_PUT] =
        "INSERT INTO accounts (id, kind, is_admin, home_channel_id) "
        "VALUES (?1, ?2, ?3, nullif(?4, '')) ON CONFLICT (id) DO UPDATE SET "
        "kind = excluded.kind, is_admin = excluded.is_admin, "
        "home_channel_id = excluded.home_channel_id "
        "WHERE accounts.kind IS NOT excluded.kind OR accounts.is_admin IS NOT excluded.is_admin "
        "OR accounts.home_channel_id IS NOT excluded.home_channel_id",
    [SQ_ACCOUNT_GET] = "SELECT id, kind, is_admin, coalesce(home_channel_id, '') FROM accounts "
                       "WHERE id = ?1",
    [SQ_ACCOUNT_LIST] = "SELECT id, kind, is_admin, coalesce(home_channel_id, '') FROM accounts "
                        "ORDER BY id",
    [SQ_CHANNEL_PUT] = "INSERT INTO channels (id) VALUES (?1) ON CONFLICT (id) DO NOTHING",
    [SQ_CHANNEL_LIST] = "SELECT id FROM channels ORDER BY id",
    [SQ_MEMBER_ADD] = "INSERT INTO memberships (account_id, channel_id) VALUES (?1, ?2) "
                      "ON CONFLICT DO NOTHING",
    [SQ_MEMBER_REMOVE] = "DELETE FROM memberships WHERE account_id = ?1 AND channel_id = ?2",
    [SQ_MEMBER_LIST] = "SELECT account_id, channel_id FROM memberships "
                       "WHERE ?1 = '' OR channel_id = ?1 ORDER BY channel_id, account_id",
    [SQ_RUNNER_PUT] = "INSERT INTO runners (id) VALUES (?1) ON CONFLICT (id) DO NOTHING",
    [SQ_RUNNER_LIST] = "SELECT id FROM runners ORDER BY id",
    [SQ_CONTAINER_PUT] =
        "INSERT INTO containers (name, agent_account_id, runner_id) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (name) DO UPDATE SET agent_account_id = excluded.agent_account_id, "
        "runner_id = excluded.runner_id "
        "WHERE containers.agent_account_id IS NOT excluded.agent_account_id "
        "OR containers.runner_id IS NOT excluded.runner_id",
    [SQ_CONTAINER_GET] = "SELECT name, agent_account_id, runner_id FROM containers "
                         "WHERE name = ?1",
    [SQ_EXISTS_ACCOUNT] = "SELECT 1 FROM accounts WHERE id = ?1",
    [SQ_EXISTS_CHANNEL] = "SELECT 1 FROM channels WHERE id = ?1",
    [SQ_EXISTS_RUNNER] = "SELECT 1 FROM runners WHERE id = ?1",
    [SQ_EXISTS_CONTAINER] = "SELECT 1 FROM containers WHERE name = ?1",
    [SQ_EXISTS_SESSION] = "SELECT 1 FROM sessions WHERE id = ?1",
    [SQ_REMOVE_ACCOUNT] = "DELETE FROM accounts WHERE id = ?1",
    [SQ_REMOVE_CHANNEL] = "DELETE FROM channels WHERE id = ?1",
    [SQ_REMOVE_RUNNER] = "DELETE FROM runners WHERE id = ?1",
    [SQ_REMOVE_CONTAINER] = "DELETE FROM containers WHERE name = ?1",
    [SQ_REMOVE_SESSION] = "DELETE FROM sessions WHERE id = ?1",
    [SQ_DATA_VERSION] = "PRAGMA data_version",
    [SQ_SESSION_HOSTED] = SESSION_COLUMNS "WHERE c.runner_id = ?1",
    [SQ_SESSION_COUNT_OPEN] = "SELECT count(*) FROM sessions s "
                              "JOIN containers c ON c.name = s.container_name "
                              "WHERE c.agent_account_id = ?1 AND s.closed = 0",
};

const char *sq_sql(enum sq_id id)
{
    return sql_text[id];
}

/* One integer from SQL (a PRAGMA or a count).  Returns SQLITE_OK with
 * *VALUE, or the SQLite result code. */
int sq_query_int(sqlite3 *db, const char *sql, int64_t *value)
{
    sqlite3_stmt *stmt;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);

    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        *value = sqlite3_column_int64(stmt, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc;
}

enum store_rc sq_migrate(sqlite3 *db, char *err, size_t errlen)
{
    char bump[64];
    int64_t stored = 0;
    int version;
    int rc;

    rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot lock the database: %s", sqlite3_errstr(rc));
        return STORE_FAULT;
    }
    rc = sq_query_int(db, "PRAGMA user_version", &stored);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot read the schema version: %s", sqlite3_errstr(rc));
        goto fail;
    }
    version = (int)stored; /* PRAGMA user_version is a 32-bit integer */
    if (version > SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "database schema version %d is newer than this agenthub supports (%d); "
                 "upgrade agenthub",
                 version, SCHEMA_VERSION);
        goto fail;
    }
    for (; version < SCHEMA_VERSION; version++) {
        rc = sqlite3_exec(db, migrations[version], NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "migration to schema version %d failed: %s", version + 1,
                     sqlite3_errstr(rc));
            goto fail;
        }
        snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", version + 1);
        rc = sqlite3_exec(db, bump, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            snprintf(err, errlen, "cannot record schema version %d: %s", version + 1,
                     sqlite3_errstr(rc));
            goto fail;
        }
    }
    rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot commit the schema: %s", sqlite3_errstr(rc));
        goto fail;
    }
    return STORE_OK;

fail:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return STORE_FAULT;
}
