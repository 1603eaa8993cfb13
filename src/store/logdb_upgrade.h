/* logdb_upgrade: what turns a session log of an older format into the
 * current one, in place.
 *
 * Format 2 counted each session's frames in chunks.  Format 3 moved
 * agenthub's own fields on messages compass defines to
 * numbers from 100 up (docs/protocol.md, "Fields that moved to 100 and
 * up").  A file of format 2 keeps its frames and bus events with the old
 * numbers; the upgrade rewrites them, field by field, without decoding
 * them into messages: only field numbers change, never a value.  Format 4
 * keeps a row per transaction (a session's entries of it, the bus's events
 * of it) instead of a row per entry; a format 3 file's rows are joined
 * into such rows. */
#ifndef AGENTHUB_STORE_LOGDB_UPGRADE_H
#define AGENTHUB_STORE_LOGDB_UPGRADE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Which message a blob holds. */
enum logdb_blob {
    LOGDB_BLOB_FRAME = 0, /* an AgentSessionFrame (entries of kind 0) */
    LOGDB_BLOB_BUS = 1,   /* a SubscribeEventsResponse without seq, at and epoch (bus) */
};

/* Writes BYTES[0..LEN) of message WHAT with format 3's numbers into *OUT
 * (malloc'd, *OUT_LEN bytes).  Returns 0, or -1 when memory is short or
 * the bytes are not a well-formed message (the caller keeps them as they
 * are). */
int logdb_renumber(enum logdb_blob what, const uint8_t *bytes, size_t len, uint8_t **out,
                   size_t *out_len);

/* Rewrites DB's frames and bus events from format 2 to format 3, inside
 * the caller's transaction.  Returns SQLite's code. */
int logdb_upgrade_2_to_3(sqlite3 *db);

/* Turns DB, a log of format FROM (1 to 3), into the current format inside
 * the caller's transaction.  Returns SQLite's code (the caller rolls back
 * on anything but SQLITE_OK). */
int logdb_upgrade(sqlite3 *db, int from);

#endif
