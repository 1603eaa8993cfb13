/* jsonl: the AgentEventsJsonlV1 codec (the record format of the producer
 * door, see docs/protocol.md).
 *
 * A producer call carries at most JSONL_MAX_CALL bytes of lines; each line is
 * one UTF-8 JSON object of at most JSONL_MAX_LINE bytes (the '\n' excluded):
 *   {"seq":u64,"ts_ms":u64,"type":<str>,"data":{...}}
 * type is one of the closed v1 set; data is an object (absent means {}); seq
 * and ts_ms from a producer are ignored, whatever their value, because the
 * server assigns both on append.  Any other top-level key is RECORD_INVALID:
 * the codec is closed, a new field is a codec revision.  Duplicate keys are
 * rejected at every depth (after decoding escapes).  A single '\n' may end
 * the call; every other empty line (and an empty call) is RECORD_INVALID.  A
 * '\r' before the '\n' is JSON whitespace and accepted.
 *
 * Validation is the strict hand-written jsonv (core/jsonv.h), not jansson:
 * a record's data_json is the producer's own text with insignificant
 * whitespace removed, so numbers and escapes are never re-rendered (a number
 * of any magnitude is kept as written).
 *
 * Validation is all-or-nothing: a call with any bad line yields no records. */
#ifndef AGENTHUB_CORE_JSONL_H
#define AGENTHUB_CORE_JSONL_H

#include <stddef.h>
#include <stdint.h>

#define JSONL_MAX_LINE 16384u
#define JSONL_MAX_CALL 65536u
#define JSONL_ERR_SIZE 128u
/* Longest data.kind / data.state word kept on a record (longer: dropped). */
#define JSONL_WORD_SIZE 32u

enum jsonl_result {
    JSONL_OK = 0,
    JSONL_RECORD_INVALID = 1,
    JSONL_OVERFLOW = 2,
    JSONL_NOMEM = 3,
};

enum jsonl_type {
    JSONL_TYPE_SESSION_START = 0,
    JSONL_TYPE_PROMPT,
    JSONL_TYPE_TOOL_START,
    JSONL_TYPE_TOOL_END,
    JSONL_TYPE_NOTIFICATION,
    JSONL_TYPE_ASK,
    JSONL_TYPE_STOP,
    JSONL_TYPE_SESSION_END,
    JSONL_TYPE_STATE,
    JSONL_TYPE_PROVIDER_RAW,
    JSONL_TYPE_COUNT
};

struct jsonl_record {
    enum jsonl_type type;
    char *data_json; /* compact JSON object text, NUL-terminated, key order kept */
    size_t data_len; /* strlen(data_json) */
    /* data.kind when it is a string (notification records), else "". */
    char kind[JSONL_WORD_SIZE];
    /* data.state when it is a string (state records), else "". */
    char state[JSONL_WORD_SIZE];
};

struct jsonl_batch {
    struct jsonl_record *records;
    size_t count;
};

/* Validates every line of BYTES[0..LEN) and, on JSONL_OK, fills *OUT with one
 * record per line (release with jsonl_batch_free).  On any other result *OUT
 * is empty and ERR (JSONL_ERR_SIZE bytes, may be NULL) holds a message naming
 * the line, e.g. "line 3: unknown type \"foo\"".  JSONL_OVERFLOW: LEN over
 * JSONL_MAX_CALL.  JSONL_NOMEM: memory ran out. */
enum jsonl_result jsonl_parse_batch(const void *bytes, size_t len, struct jsonl_batch *out,
                                    char *err);
void jsonl_batch_free(struct jsonl_batch *b);

/* Validates a record given as its parts (a relayed compass.v1 AgentRecord)
 * exactly as the line {"type":TYPE,"data":DATA} would be: TYPE is in the v1
 * set, DATA[0..DATA_LEN) is one JSON object and nothing else (empty means
 * {}), and the line fits JSONL_MAX_LINE.  On JSONL_OK *REC holds the record
 * with data_json in the codec's compact form (free rec->data_json).
 * Otherwise JSONL_RECORD_INVALID with a reason in ERR (JSONL_ERR_SIZE bytes,
 * may be NULL), or JSONL_NOMEM. */
enum jsonl_result jsonl_parse_record(const char *type, size_t type_len, const char *data,
                                     size_t data_len, struct jsonl_record *rec, char *err);

/* "session_start" ... "provider_raw"; NULL for an out-of-range value. */
const char *jsonl_type_name(enum jsonl_type t);
/* Returns the type named NAME[0..LEN), or -1 when it is not in the v1 set. */
int jsonl_type_from_name(const char *name, size_t len);

/* 1 when a notification record's kind asks the user (permission,
 * elicitation, elicitation_url or worker_permission: a subagent's
 * permission prompt), which the arbiter reads as BLOCKED; else 0. */
int jsonl_record_blocks(const struct jsonl_record *rec);

/* Writes the canonical line {"seq":N,"ts_ms":T,"type":"...","data":DATA}
 * (no trailing newline, NUL-terminated when it fits) into OUT[0..CAP) and
 * returns its length; when the result is >= CAP the line did not fit (as
 * snprintf).  DATA_JSON must be compact object text from a parsed record; NULL
 * or empty renders {}.  Returns -1 for an invalid type. */
int jsonl_render(uint64_t seq, int64_t ts_ms, enum jsonl_type type, const char *data_json,
                 size_t data_len, char *out, size_t cap);

#endif
