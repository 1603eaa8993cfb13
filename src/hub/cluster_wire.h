/* cluster_wire: how a cluster's session logs look in NATS JetStream
 * (docs/cluster.md): subject names and the entries of a batch message.
 *
 * Subjects: agenthub.frames.<token> for a session, agenthub.frames.=<token>
 * for a Runner's new runs; <token> is the id itself when every byte is a
 * letter, digit, '-' or '_', else '~' and the id's hex.
 *
 * A batch message's body is a run of entries, each, little-endian: kind
 * (1), frame length (4), at_unix_ms (8), origin length (1), runner_seq (8),
 * then the origin (a Runner id, or nothing) and the frame's bytes.  Bodies
 * come from the network: cluster_wire_next checks every length. */
#ifndef AGENTHUB_HUB_CLUSTER_WIRE_H
#define AGENTHUB_HUB_CLUSTER_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/session.h"

#define CLUSTER_FRAMES_PREFIX "agenthub.frames."
/* A subject with its NUL: prefix, "=." or '~', and the hex of the longest id. */
#define CLUSTER_SUBJECT_MAX (sizeof(CLUSTER_FRAMES_PREFIX) + 3 + 2 * SESSION_MAX_ID)
/* Every Runner's subject: a filter of its own, apart from the sessions'
 * (a Runner's subject before this one was "=<runner>", one token). */
#define CLUSTER_RUNNERS_FILTER CLUSTER_FRAMES_PREFIX "=.>"

#define CLUSTER_ENTRY_HEAD 22u

#define CLUSTER_ENTRY_FRAME        0xffu /* origin: a Runner id (no run named), or none */
#define CLUSTER_ENTRY_RUNNER_RESET 0xfeu /* a Runner's new run; runner_seq: its nonce */
/* A frame whose origin is tagged (struct cluster_wire_origin): a Runner's
 * frame naming its run and runner_seq, or a producer's record under an
 * idempotency key.  Readers take each origin's entries once. */
#define CLUSTER_ENTRY_TAGGED 0xfdu
/* On a Runner's subject: runner_seq values of a run dealt with without a
 * frame in the log (dropped by the relay policy, or a gap the Runner left).
 * runner_seq: the first; frame: the run's nonce and the last (8 + 8). */
#define CLUSTER_ENTRY_RUNNER_DEALT 0xfcu
/* On a Runner's subject: nothing but a point in the stream, so a node that
 * reads it knows it has read everything written for the Runner before. */
#define CLUSTER_ENTRY_RUNNER_SYNC 0xfbu
/* Other kinds are enum hub_log_mark values. */

/* The origin of a CLUSTER_ENTRY_TAGGED entry, as its origin bytes hold it:
 *   'r', nonce (8), part (1), the Runner id     a Runner's frame
 *   'k', part (4), the key                      a keyed record
 * PART numbers the entries one runner_seq (or one keyed call) made, from
 * 0: one Runner frame can append an event and a state frame. */
enum cluster_origin_kind {
    CLUSTER_ORIGIN_NONE = 0,
    CLUSTER_ORIGIN_RUNNER = 'r',
    CLUSTER_ORIGIN_KEY = 'k',
};

struct cluster_wire_origin {
    enum cluster_origin_kind kind;
    const uint8_t *id; /* the Runner id or the key, ID_LEN bytes */
    size_t id_len;
    uint64_t nonce; /* a Runner's run */
    uint32_t part;
};

/* In a keyed origin's part: the entry is derived from the call's records
 * (a state frame they imply), not one of them. */
#define CLUSTER_PART_DERIVED 0x80000000u
/* Longest id or key a tagged origin can carry (origins are at most 255). */
#define CLUSTER_ORIGIN_ID_MAX 245u

struct cluster_wire_entry {
    uint8_t kind;
    int64_t at_unix_ms;
    uint64_t runner_seq;
    const uint8_t *origin; /* ORIGIN_LEN bytes, not NUL-terminated */
    size_t origin_len;     /* at most 255 */
    const uint8_t *frame;
    size_t frame_len;
};

/* The subject of session ID into OUT (CLUSTER_SUBJECT_MAX bytes); with
 * RUNNER, the subject of Runner ID's runs and marks, "=." and the id
 * (CLUSTER_RUNNERS_FILTER matches every Runner's). */
void cluster_wire_subject(const char *id, int runner, char *out);

/* The session id of SUBJECT into OUT (SESSION_MAX_ID + 1 bytes).  Returns 0,
 * or -1 when SUBJECT is not a session's (a Runner's, or malformed). */
int cluster_wire_session_id(const char *subject, char *out);

/* Bytes entry E takes in a body. */
size_t cluster_wire_entry_size(const struct cluster_wire_entry *e);
/* Writes E at OUT (cluster_wire_entry_size bytes).  Returns that size. */
size_t cluster_wire_put(uint8_t *out, const struct cluster_wire_entry *e);

/* Reads the entry at *OFF of BODY[0..LEN) into *E (pointing into BODY) and
 * moves *OFF past it.  Returns 1, 0 at the end, or -1 when the rest is
 * malformed (a length past the end): the entries before it stand. */
int cluster_wire_next(const uint8_t *body, size_t len, size_t *off, struct cluster_wire_entry *e);

/* Writes O's origin bytes at OUT (at least 255 bytes).  Returns their
 * length, or 0 when O's id is longer than CLUSTER_ORIGIN_ID_MAX. */
size_t cluster_wire_origin_put(uint8_t *out, const struct cluster_wire_origin *o);
/* The tagged origin of ORIGIN[0..LEN) into *O (pointing into ORIGIN).
 * Returns 0, or -1 when it is not a well-formed tagged origin (*O is then
 * CLUSTER_ORIGIN_NONE). */
int cluster_wire_origin_parse(const uint8_t *origin, size_t len, struct cluster_wire_origin *o);

/* A bus batch message's body (hub_log_js_bus.c) is a run of entries,
 * each, little-endian: at_unix_ms (8), payload length (4), the payload. */
#define CLUSTER_BUS_ENTRY_HEAD 12u

/* Writes a bus entry of PAYLOAD[0..LEN) stamped AT_UNIX_MS at OUT
 * (CLUSTER_BUS_ENTRY_HEAD + LEN bytes). */
void cluster_wire_bus_put(uint8_t *out, int64_t at_unix_ms, const void *payload, size_t len);

/* The size of the bus entry at ENTRY, whose head is there (written by
 * cluster_wire_bus_put: not checked). */
size_t cluster_wire_bus_entry_size(const uint8_t *entry);

/* Reads the bus entry at BODY[*AT..LEN): 1 with *AT_UNIX_MS, *PAYLOAD and
 * *PAYLOAD_LEN and *AT past it, 0 at the end, -1 when its lengths run past
 * LEN (bodies come from the network). */
int cluster_wire_bus_next(const uint8_t *body, size_t len, size_t *at, int64_t *at_unix_ms,
                          const uint8_t **payload, size_t *payload_len);

#endif
