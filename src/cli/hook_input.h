/* hook_input: the few members of a Claude Code hook's stdin JSON that the
 * shim reads, taken from a stream of any size (pure; no I/O).
 *
 * A hook's JSON can be very large (a PreToolUse carries the tool's whole
 * input, a PostToolUse its whole response), but the shim only needs a few
 * top-level strings and the prompt's length.  This is a push parser: the
 * caller feeds the bytes in chunks of any size, as they arrive.  It checks
 * that the whole input is one JSON object (RFC 8259; at most
 * HOOK_INPUT_DEPTH_MAX values deep) and keeps only
 *   - the top-level strings of enum hook_member, each up to
 *     HOOK_INPUT_STRING_MAX bytes (past it, only that many bytes: see
 *     hook_input_string);
 *   - the length of the top-level "prompt" string in code points, counted
 *     as it goes by (the text is never kept);
 *   - whether the top-level "is_interrupt" is true;
 *   - the input bytes themselves while there are at most HOOK_INPUT_RAW_MAX
 *     of them (for provider_raw);
 * and skips everything else without storing it.  Memory stays bounded for
 * any input.  A member given twice counts as its last value, as jansson
 * reads it.  Numbers of any size and U+0000 inside strings are valid JSON
 * and accepted here (jansson refuses them without options). */
#ifndef AGENTHUB_CLI_HOOK_INPUT_H
#define AGENTHUB_CLI_HOOK_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* A kept member's text is at most this many bytes of UTF-8. */
#define HOOK_INPUT_STRING_MAX 65536u
/* The input bytes are kept while there are at most this many. */
#define HOOK_INPUT_RAW_MAX 65536u
/* Values nest at most this deep (the top-level object is depth 1), as in
 * jansson. */
#define HOOK_INPUT_DEPTH_MAX 2048u

enum hook_member {
    HOOK_SESSION_ID,
    HOOK_EVENT_NAME, /* hook_event_name */
    HOOK_TOOL_NAME,
    HOOK_SOURCE,
    HOOK_NOTIFICATION_TYPE,
    HOOK_MESSAGE,
    HOOK_REASON,
    HOOK_ERROR, /* kept to be reduced to a kind word, never sent as it is */
    HOOK_TRIGGER,
    HOOK_AGENT_TYPE,
    HOOK_MCP_SERVER_NAME,
    HOOK_ACTION,
    HOOK_MEMBERS
};

struct hook_input_text {
    char *text; /* NUL-terminated UTF-8; NULL when absent or not a string */
    size_t len;
    size_t cap;
    int cut; /* text is only the value's start: it was longer, or held U+0000 */
};

struct hook_input {
    /* What was read: valid once hook_input_end returned 0. */
    struct hook_input_text member[HOOK_MEMBERS];
    int has_prompt;         /* the top-level "prompt" is a string */
    uint64_t prompt_length; /* its length in code points */
    int is_interrupt;       /* the top-level "is_interrupt" is true */
    uint64_t bytes;         /* input bytes fed */
    char *raw;              /* the input while bytes <= HOOK_INPUT_RAW_MAX, else NULL */
    size_t raw_cap;

    /* The parser's state (hook_input.c). */
    int state;                                     /* what the next byte may be */
    int num_state;                                 /* where inside a number */
    int role;                                      /* what the current string is for */
    int next_role;                                 /* what the next top-level value is for */
    int target;                                    /* the member a ROLE_MEMBER string fills */
    int failed;                                    /* 1 once the input cannot be a hook */
    unsigned depth;                                /* containers open */
    unsigned char stack[HOOK_INPUT_DEPTH_MAX / 8]; /* bit set: an object */
    const char *literal;                           /* true / false / null being matched */
    unsigned literal_at;
    unsigned hex_left;     /* hex digits still to read in \uXXXX */
    uint32_t code;         /* the \uXXXX being read */
    uint32_t high;         /* a high surrogate waiting for its low half, else 0 */
    unsigned utf8_left;    /* continuation bytes still due */
    unsigned char utf8_lo; /* bounds of the next continuation byte */
    unsigned char utf8_hi;
    unsigned char seq[4]; /* the UTF-8 sequence being read */
    unsigned seq_len;
    char key[24]; /* the top-level key being read */
    unsigned key_len;
    int key_long; /* it does not fit key: no member */
};

void hook_input_init(struct hook_input *in);

/* Parses LEN more bytes of the input.  Returns 0 while the input can still
 * be a hook, or -1 once it cannot (not JSON, not an object, too deep,
 * something after the object, or memory ran out); -1 sticks. */
int hook_input_feed(struct hook_input *in, const void *data, size_t len);

/* Returns 0 when the bytes fed so far are one complete JSON object followed
 * by nothing but whitespace, else -1.  The caller decides whether more
 * could come (end of input, or out of time). */
int hook_input_end(const struct hook_input *in);

/* The member's whole value, or NULL when it is absent, not a string, longer
 * than HOOK_INPUT_STRING_MAX or holds U+0000. */
const char *hook_input_string(const struct hook_input *in, enum hook_member m);

/* The member's value or, for one that hook_input_string refuses for its
 * length or a U+0000, the part before the cut; NULL when it is absent or not
 * a string.  For searching a text that could be long. */
const char *hook_input_prefix(const struct hook_input *in, enum hook_member m);

/* The input's bytes (*LEN of them) while at most HOOK_INPUT_RAW_MAX were
 * fed, else NULL. */
const char *hook_input_raw(const struct hook_input *in, size_t *len);

void hook_input_free(struct hook_input *in);

#endif
