/* sqlite_cache: see sqlite_cache.h for the invalidation rule.
 *
 * Two hash tables (common/hash_map.h) with string keys.  There is no
 * per-entry deletion: any change anywhere drops everything, which is
 * cheap because ownership changes are rare next to reads. */
#include <stdlib.h>
#include <string.h>

#include "common/hash_map.h"
#include "store/sqlite_cache.h"
#include "store/sqlite_internal.h"

/* A full cache is dropped rather than evicted piecemeal. */
#define CACHE_MAX (1u << 15)

/* The first copy of the wal-index header at the start of the -shm file
 * (https://sqlite.org/walformat.html): its iChange counter moves with every
 * committed transaction, and every commit rewrites it. */
#define WAL_HDR_LEN 48

struct cache_entry {
    struct hash_map_node node; /* keyed by key[0..keylen) */
    int present;               /* session: exists */
    void *value;               /* struct store_session, or a member_set; NULL when absent */
    size_t keylen;
    char key[];
};

struct cache_table {
    struct hash_map map; /* of struct cache_entry */
};

struct sq_cache {
    struct cache_table sessions;
    struct cache_table members; /* account id -> every channel it is in */
    int64_t data_version;
    int have_version;
    int off;
    unsigned char walhdr[WAL_HDR_LEN]; /* wal-index header at data_version */
    int have_walhdr;
    /* change_generation's own watch of data_version. */
    int64_t watch_version;
    int watch_have_version;
    unsigned char watch_walhdr[WAL_HDR_LEN];
    int watch_have_walhdr;
    uint64_t generation;
    int scope;         /* read_begin nesting depth */
    int scope_checked; /* the check ran inside the current scope */
    int scope_probed;  /* the file header was checked inside the scope */
};

/* Drops every entry; the bucket array stays for the next fill. */
static void table_clear(struct cache_table *t)
{
    struct hash_map_node *node, *next;

    for (node = hash_map_first(&t->map); node; node = next) {
        struct cache_entry *e = hash_map_entry(node, struct cache_entry, node);

        next = hash_map_next(&t->map, node);
        hash_map_remove(&t->map, node);
        free(e->value);
        free(e);
    }
}

static struct cache_entry *table_find(struct cache_table *t, const char *key, size_t keylen)
{
    struct hash_map_node *node = hash_map_find(&t->map, key, keylen);

    return node ? hash_map_entry(node, struct cache_entry, node) : NULL;
}

/* Returns a new or existing entry for KEY, or NULL when out of memory. */
static struct cache_entry *table_put(struct cache_table *t, const char *key, size_t keylen)
{
    struct cache_entry *e = table_find(t, key, keylen);

    if (e)
        return e;
    if (hash_map_count(&t->map) >= CACHE_MAX)
        table_clear(t);
    e = calloc(1, sizeof(*e) + keylen);
    if (!e)
        return NULL;
    memcpy(e->key, key, keylen);
    e->keylen = keylen;
    if (hash_map_insert(&t->map, &e->node, e->key, keylen) != HASH_MAP_OK) {
        free(e);
        return NULL;
    }
    return e;
}

struct sq_cache *sq_cache_new(void)
{
    struct sq_cache *c = calloc(1, sizeof(struct sq_cache));

    if (c) {
        hash_map_init(&c->sessions.map);
        hash_map_init(&c->members.map);
    }
    return c;
}

void sq_cache_free(struct sq_cache *c)
{
    if (!c)
        return;
    table_clear(&c->sessions);
    table_clear(&c->members);
    hash_map_free(&c->sessions.map);
    hash_map_free(&c->members.map);
    free(c);
}

void sq_cache_set_enabled(struct sq_cache *c, int on)
{
    sq_cache_clear(c);
    c->off = !on;
}

void sq_cache_scope(struct sq_cache *c, int enter)
{
    if (enter) {
        if (c->scope++ == 0) {
            c->scope_checked = 0;
            c->scope_probed = 0;
        }
    } else if (c->scope > 0) {
        c->scope--;
    }
}

void sq_cache_clear(struct sq_cache *c)
{
    if (!c)
        return;
    table_clear(&c->sessions);
    table_clear(&c->members);
    c->have_version = 0;
    c->have_walhdr = 0;
}

void sq_cache_mark_valid(struct sq_cache *c)
{
    c->have_version = 1;
}

/* Returns 1 when the main database file still starts with SQLite's magic
 * string.  In WAL mode a reader whose wal-index did not move serves pages
 * from its page cache and never looks at the file, so a database scribbled
 * over by something outside SQLite would otherwise keep answering from
 * memory; one 16-byte pread per read (per decision inside a read scope)
 * turns that into a fault. */
static int header_intact(struct sqlite_store *st)
{
    static const char magic[16] = "SQLite format 3";
    sqlite3_file *fp = NULL;
    char buf[16];

    if (sqlite3_file_control(st->db, "main", SQLITE_FCNTL_FILE_POINTER, &fp) != SQLITE_OK || !fp ||
        !fp->pMethods)
        return 0;
    if (fp->pMethods->xRead(fp, buf, sizeof(buf), 0) != SQLITE_OK)
        return 0;
    return memcmp(buf, magic, sizeof(magic)) == 0;
}

int sq_cache_header_ok(struct sqlite_store *st)
{
    struct sq_cache *c = st->cache;

    if (c->scope > 0 && c->scope_probed)
        return 1;
    if (!header_intact(st)) {
        sq_cache_clear(c);
        return 0;
    }
    if (c->scope > 0)
        c->scope_probed = 1;
    return 1;
}

/* Copies the current wal-index header into OUT; returns 0 when the shared
 * memory is not mapped (then callers fall back to PRAGMA data_version).
 *
 * Why: PRAGMA data_version opens a read transaction, which in WAL mode
 * takes and drops a shared-memory lock (two fcntl calls) each time.  The
 * header is what SQLite itself compares to notice another connection's
 * commit, and it is a stable, documented format shared by every SQLite
 * version that opens the same database.  An unchanged header means no
 * commit happened since we last read data_version; a changed one (commit,
 * checkpoint restart, or garbage) sends us back to the PRAGMA. */
static int wal_header(struct sqlite_store *st, unsigned char out[WAL_HDR_LEN])
{
    sqlite3_file *fp = NULL;
    volatile void *region = NULL;

    if (sqlite3_file_control(st->db, "main", SQLITE_FCNTL_FILE_POINTER, &fp) != SQLITE_OK || !fp ||
        !fp->pMethods || fp->pMethods->iVersion < 2 || !fp->pMethods->xShmMap)
        return 0;
    if (fp->pMethods->xShmMap(fp, 0, 32768, 0, &region) != SQLITE_OK || !region)
        return 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    memcpy(out, (const void *)region, WAL_HDR_LEN);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 1;
}

enum store_rc sq_cache_check(struct sqlite_store *st)
{
    unsigned char hdr[WAL_HDR_LEN];
    int have_hdr;
    sqlite3_stmt *stmt = sq_stmt(st, SQ_DATA_VERSION);
    int64_t v;
    int rc;

    if (st->cache->scope > 0 && st->cache->scope_checked)
        return STORE_OK;
    if (st->cache->off) {
        if (st->cache->scope > 0)
            st->cache->scope_checked = 1;
        return STORE_OK;
    }
    have_hdr = wal_header(st, hdr);
    if (have_hdr && st->cache->have_version && st->cache->have_walhdr &&
        memcmp(hdr, st->cache->walhdr, WAL_HDR_LEN) == 0) {
        if (st->cache->scope > 0)
            st->cache->scope_checked = 1;
        return STORE_OK;
    }
    if (!stmt)
        return STORE_FAULT;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) {
        sq_release(stmt);
        sq_cache_clear(st->cache);
        return sq_read_fault(st, rc);
    }
    v = sqlite3_column_int64(stmt, 0);
    sq_release(stmt);
    /* Inside an explicit transaction this handle may have uncommitted
     * writes; those already cleared the cache through sq_note_write. */
    if (!st->cache->have_version || st->cache->data_version != v) {
        sq_cache_clear(st->cache);
        st->cache->data_version = v;
        st->cache->have_version = 1;
    }
    /* The header was copied before data_version was read, so a commit in
     * between shows up as a changed header next time: never stale. */
    if (have_hdr)
        memcpy(st->cache->walhdr, hdr, WAL_HDR_LEN);
    st->cache->have_walhdr = have_hdr;
    if (st->cache->scope > 0)
        st->cache->scope_checked = 1;
    return STORE_OK;
}

enum store_rc sq_cache_generation(struct sqlite_store *st, uint64_t *generation)
{
    struct sq_cache *c = st->cache;
    unsigned char hdr[WAL_HDR_LEN];
    int have_hdr = wal_header(st, hdr);
    sqlite3_stmt *stmt;
    int64_t v;
    int rc;

    if (have_hdr && c->watch_have_walhdr && c->watch_have_version &&
        memcmp(hdr, c->watch_walhdr, WAL_HDR_LEN) == 0) {
        *generation = c->generation;
        return STORE_OK;
    }
    stmt = sq_stmt(st, SQ_DATA_VERSION);
    if (!stmt)
        return STORE_FAULT;
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) {
        sq_release(stmt);
        return sq_read_fault(st, rc);
    }
    v = sqlite3_column_int64(stmt, 0);
    sq_release(stmt);
    if (c->watch_have_version && c->watch_version != v)
        c->generation++;
    c->watch_version = v;
    c->watch_have_version = 1;
    /* Copied before data_version was read: a commit in between shows as a
     * changed header next time, never as a missed change. */
    if (have_hdr)
        memcpy(c->watch_walhdr, hdr, WAL_HDR_LEN);
    c->watch_have_walhdr = have_hdr;
    *generation = c->generation;
    return STORE_OK;
}

enum store_rc sq_cache_session_get(struct sq_cache *c, const char *session_id,
                                   struct store_session *out)
{
    struct cache_entry *e = table_find(&c->sessions, session_id, strlen(session_id));

    if (!e)
        return STORE_FAULT;
    if (!e->present)
        return STORE_NOT_FOUND;
    *out = *(const struct store_session *)e->value;
    return STORE_OK;
}

void sq_cache_session_put(struct sq_cache *c, const char *session_id, const struct store_session *s)
{
    struct cache_entry *e;

    if (c->off || !c->have_version)
        return;
    e = table_put(&c->sessions, session_id, strlen(session_id));
    if (!e)
        return;
    if (s && !e->value) {
        e->value = malloc(sizeof(struct store_session));
        if (!e->value) {
            e->present = 0; /* remembered as absent would be wrong: drop all */
            table_clear(&c->sessions);
            return;
        }
    }
    if (s)
        *(struct store_session *)e->value = *s;
    e->present = s != NULL;
}

/* An account's channels, NUL-separated, so one SQL read answers every
 * later membership question about that account. */
struct member_set {
    size_t len;
    char ids[];
};

enum store_rc sq_cache_member_get(struct sq_cache *c, const char *account_id,
                                  const char *channel_id)
{
    struct cache_entry *e = table_find(&c->members, account_id, strlen(account_id));
    const struct member_set *ms;
    size_t off, n;

    if (!e || !e->value)
        return STORE_FAULT;
    ms = e->value;
    for (off = 0; off < ms->len; off += n + 1) {
        n = strlen(ms->ids + off);
        if (strcmp(ms->ids + off, channel_id) == 0)
            return STORE_OK;
    }
    return STORE_NOT_FOUND;
}

void sq_cache_member_put(struct sq_cache *c, const char *account_id, const char *channels,
                         size_t len)
{
    struct member_set *ms;
    struct cache_entry *e;

    if (c->off || !c->have_version)
        return;
    ms = malloc(sizeof(*ms) + len + 1);
    if (!ms)
        return;
    ms->len = len;
    memcpy(ms->ids, channels, len);
    ms->ids[len] = '\0';
    e = table_put(&c->members, account_id, strlen(account_id));
    if (!e) {
        free(ms);
        return;
    }
    free(e->value);
    e->value = ms;
}
