/* sqlite_cache: the SQLite backend's cache of the gate's reads (sessions
 * and each account's channel list), so a view decision costs no B-tree
 * walk and no lock.
 *
 * The invalidation rule: a cached answer is served only while PRAGMA
 * data_version is unchanged since it was cached (that value moves whenever
 * another connection, such as `agenthub admin` in another process, commits)
 * and this handle has not written since (its own commits do not move it).
 * So no cache ever serves a removed membership or a deleted session. */
#ifndef AGENTHUB_SQLITE_CACHE_H
#define AGENTHUB_SQLITE_CACHE_H

#include <stddef.h>

#include "store/store.h"

/* The tables are backend-neutral; the PostgreSQL backend keeps its gate
 * cache in them too, validated by LISTEN/NOTIFY instead of data_version. */
struct sq_cache;
struct sqlite_store;

struct sq_cache *sq_cache_new(void);
void sq_cache_free(struct sq_cache *c);

/* Turns caching on or off (off: every lookup misses, nothing is kept). */
void sq_cache_set_enabled(struct sq_cache *c, int on);

/* Open and close a read scope (store_ops.read_begin/read_end): inside it
 * the first sq_cache_check does the work and the rest reuse its answer. */
void sq_cache_scope(struct sq_cache *c, int enter);

/* Drops every entry (a write by this handle). */
void sq_cache_clear(struct sq_cache *c);

/* For a backend that validates the cache itself: from now until the next
 * sq_cache_clear, answers may be remembered. */
void sq_cache_mark_valid(struct sq_cache *c);

/* Returns 1 when the main database file still starts with SQLite's magic
 * string (checked once per read scope), else 0. */
int sq_cache_header_ok(struct sqlite_store *st);

/* Checks PRAGMA data_version and drops the cache when it moved.  Returns
 * STORE_OK, or STORE_FAULT when the database cannot be read (then nothing
 * may be served from the cache either). */
enum store_rc sq_cache_check(struct sqlite_store *st);

/* store_ops.change_generation: a counter that moves when PRAGMA
 * data_version does (another connection committed), checked with the same
 * wal-index header shortcut as sq_cache_check but kept apart from the
 * cache, so it works with the cache off too.  Returns STORE_OK, or
 * STORE_FAULT when the database cannot be read. */
enum store_rc sq_cache_generation(struct sqlite_store *st, uint64_t *generation);

/* Lookups return STORE_OK / STORE_NOT_FOUND for a cached answer (positive
 * or negative) and STORE_FAULT for "not cached". */
enum store_rc sq_cache_session_get(struct sq_cache *c, const char *session_id,
                                   struct store_session *out);
enum store_rc sq_cache_member_get(struct sq_cache *c, const char *account_id,
                                  const char *channel_id);

/* Remember an answer.  S NULL caches "no such session".  Out of memory
 * just skips caching. */
void sq_cache_session_put(struct sq_cache *c, const char *session_id,
                          const struct store_session *s);
/* Remembers every channel ACCOUNT_ID is a member of: CHANNELS holds LEN
 * bytes of NUL-terminated ids, one after another. */
void sq_cache_member_put(struct sq_cache *c, const char *account_id, const char *channels,
                         size_t len);

#endif
