/* hook_input: a streaming reader for the hook's stdin JSON (hook_input.h).
 *
 * One byte-at-a-time state machine, with tight loops over the long runs
 * (plain string bytes, numbers) that make up nearly all of a large input;
 * a chunk may end anywhere, even inside an escape or a UTF-8 sequence.  Strings are checked as
 * jansson checks them: UTF-8 without overlong forms, surrogates or code points past U+10FFFF, no
 * raw control characters, only JSON's escapes, and a \uXXXX surrogate only as a high/low pair. */
#include "cli/hook_input.h"

#include <stdlib.h>
#include <string.h>

#include "common/hex.h"

enum {
    ST_TOP,          /* before the object: '{' */
    ST_VALUE,        /* a value */
    ST_VALUE_OR_END, /* after '[': a value or ']' */
    ST_KEY,          /* after ',' in an object: a key */
    ST_KEY_OR_END,   /* after '{': a key or '}' */
    ST_COLON,        /* after a key */
    ST_NEXT,         /* after a value in a container: ',' or its end */
    ST_DONE,         /* after the object: whitespace only */
    ST_STRING,       /* inside a string */
    ST_ESCAPE,       /* after '\' */
    ST_HEX,          /* inside \uXXXX */
    ST_LOW_SLASH,    /* after a high surrogate: '\' of its low half */
    ST_LOW_U,        /* then 'u' */
    ST_UTF8,         /* inside a multi-byte UTF-8 sequence */
    ST_NUMBER,
    ST_LITERAL, /* true, false, null */
};

enum {
    N_MINUS, /* after '-': a digit */
    N_ZERO,  /* after a leading 0: '.', 'e' or the end */
    N_INT,   /* in the integer digits */
    N_DOT,   /* after '.': a digit */
    N_FRAC,  /* in the fraction digits */
    N_E,     /* after 'e': a sign or a digit */
    N_ESIGN, /* after the exponent's sign: a digit */
    N_EXP,   /* in the exponent digits */
};

enum {
    ROLE_SKIP,     /* a value nobody reads: checked only */
    ROLE_SKIP_KEY, /* a key below the top level */
    ROLE_KEY,      /* a top-level key: decoded into in->key */
    ROLE_MEMBER,   /* a kept member's value: decoded into in->member */
    ROLE_PROMPT,   /* the prompt: its code points counted */
    ROLE_FLAG,     /* is_interrupt: only whether it is true */
};

static const char *const member_names[HOOK_MEMBERS] = {
    "session_id", "hook_event_name", "tool_name", "source",     "notification_type", "message",
    "reason",     "error",           "trigger",   "agent_type", "mcp_server_name",   "action",
};

void hook_input_init(struct hook_input *in)
{
    memset(in, 0, sizeof(*in));
    in->state = ST_TOP;
    in->next_role = ROLE_SKIP;
}

void hook_input_free(struct hook_input *in)
{
    for (int m = 0; m < HOOK_MEMBERS; m++)
        free(in->member[m].text);
    free(in->raw);
    memset(in, 0, sizeof(*in));
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A byte a string may hold as it is, one code point. */
static int is_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Appends N bytes of a value to the kept member.  An ASCII run (WHOLE 0) is
 * cut anywhere; a multi-byte sequence (WHOLE 1) goes in whole or not at
 * all, so the text never ends inside a character.  Returns 0, or -1 when
 * memory ran out. */
static int member_append(struct hook_input *in, const unsigned char *bytes, size_t n, int whole)
{
    struct hook_input_text *t = &in->member[in->target];
    size_t room = HOOK_INPUT_STRING_MAX - t->len;

    if (t->cut)
        return 0;
    if (n > room) {
        t->cut = 1;
        if (whole)
            return 0;
        n = room;
    }
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap;
        char *more;
        while (cap < t->len + n + 1)
            cap *= 2;
        if (cap > HOOK_INPUT_STRING_MAX + 1)
            cap = HOOK_INPUT_STRING_MAX + 1;
        more = realloc(t->text, cap);
        if (!more)
            return -1;
        t->text = more;
        t->cap = cap;
    }
    memcpy(t->text + t->len, bytes, n);
    t->len += n;
    t->text[t->len] = '\0';
    return 0;
}

/* Takes BYTES (N of them: COUNT code points; WHOLE as in member_append)
 * of the current string for what the string is for.  Returns 0, or -1
 * when memory ran out. */
static int take(struct hook_input *in, const unsigned char *bytes, size_t n, size_t count,
                int whole)
{
    switch (in->role) {
    case ROLE_PROMPT:
        in->prompt_length += count;
        return 0;
    case ROLE_MEMBER:
        return member_append(in, bytes, n, whole);
    case ROLE_KEY:
        if (n > sizeof(in->key) - 1 - in->key_len) {
            in->key_long = 1;
            return 0;
        }
        memcpy(in->key + in->key_len, bytes, n);
        in->key_len += (unsigned)n;
        return 0;
    default:
        return 0;
    }
}

/* Takes the code point CP of an escape.  U+0000 cuts a kept text (a C
 * string cannot hold it) and makes a key match no member.  Returns 0, or
 * -1 when memory ran out. */
static int take_code_point(struct hook_input *in, uint32_t cp)
{
    unsigned char b[4];
    size_t n;

    if (cp == 0) {
        if (in->role == ROLE_MEMBER)
            in->member[in->target].cut = 1;
        else if (in->role == ROLE_KEY)
            in->key_long = 1;
        else if (in->role == ROLE_PROMPT)
            in->prompt_length++;
        return 0;
    }
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return take(in, b, n, 1, 1);
}

static int top_is_object(const struct hook_input *in)
{
    unsigned i = in->depth - 1;

    return (in->stack[i / 8] >> (i % 8)) & 1;
}

/* A value just ended: what may follow it. */
static void end_value(struct hook_input *in)
{
    in->state = in->depth == 0 ? ST_DONE : ST_NEXT;
}

/* The top-level key in in->key ended: what its value is for. */
static void end_key(struct hook_input *in)
{
    in->next_role = ROLE_SKIP;
    if (in->key_long)
        return;
    in->key[in->key_len] = '\0';
    if (strcmp(in->key, "prompt") == 0) {
        in->next_role = ROLE_PROMPT;
        return;
    }
    if (strcmp(in->key, "is_interrupt") == 0) {
        in->next_role = ROLE_FLAG;
        return;
    }
    for (int m = 0; m < HOOK_MEMBERS; m++) {
        if (strcmp(in->key, member_names[m]) == 0) {
            in->next_role = ROLE_MEMBER;
            in->target = m;
            return;
        }
    }
}

/* A string's closing quote. */
static void end_string(struct hook_input *in)
{
    switch (in->role) {
    case ROLE_KEY:
        end_key(in);
        in->state = ST_COLON;
        return;
    case ROLE_SKIP_KEY:
        in->state = ST_COLON;
        return;
    case ROLE_PROMPT:
        in->has_prompt = 1;
        break;
    default:
        break;
    }
    end_value(in);
}

/* Opens a key at C ('"' expected).  Returns 0, or -1 when C is not one. */
static int start_key(struct hook_input *in, unsigned char c)
{
    if (c != '"')
        return -1;
    in->role = in->depth == 1 ? ROLE_KEY : ROLE_SKIP_KEY;
    in->key_len = 0;
    in->key_long = 0;
    in->state = ST_STRING;
    return 0;
}

/* Opens the value that starts with C.  A top-level member's value takes the
 * role its key gave it, and replaces what an earlier same key left.
 * Returns 0, or -1 when C starts no value, the value is too deep or memory
 * ran out. */
static int start_value(struct hook_input *in, unsigned char c)
{
    int role = in->depth == 1 ? in->next_role : ROLE_SKIP;

    if (in->depth + 1 > HOOK_INPUT_DEPTH_MAX)
        return -1;
    in->next_role = ROLE_SKIP;
    if (role == ROLE_MEMBER) {
        struct hook_input_text *t = &in->member[in->target];
        free(t->text);
        memset(t, 0, sizeof(*t));
    } else if (role == ROLE_PROMPT) {
        in->has_prompt = 0;
        in->prompt_length = 0;
    } else if (role == ROLE_FLAG) {
        /* Only the literal true counts; the literal is checked as it is
         * read, and an input that is no JSON is no hook at all. */
        in->is_interrupt = c == 't';
    }
    switch (c) {
    case '"':
        in->role = role;
        in->state = ST_STRING;
        if (role == ROLE_MEMBER) {
            struct hook_input_text *t = &in->member[in->target];
            t->text = malloc(64);
            if (!t->text)
                return -1;
            t->text[0] = '\0';
            t->cap = 64;
        }
        return 0;
    case '{':
    case '[':
        if (c == '{')
            in->stack[in->depth / 8] |= (unsigned char)(1u << (in->depth % 8));
        else
            in->stack[in->depth / 8] &= (unsigned char)~(1u << (in->depth % 8));
        in->depth++;
        in->state = c == '{' ? ST_KEY_OR_END : ST_VALUE_OR_END;
        return 0;
    case 't':
        in->literal = "true";
        break;
    case 'f':
        in->literal = "false";
        break;
    case 'n':
        in->literal = "null";
        break;
    default:
        if (c != '-' && (c < '0' || c > '9'))
            return -1;
        in->state = ST_NUMBER;
        in->num_state = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
        return 0;
    }
    in->literal_at = 1;
    in->state = ST_LITERAL;
    return 0;
}

/* Closes the container on top with C ('}' or ']').  Returns 0, or -1 when
 * C does not close it. */
static int close_container(struct hook_input *in, unsigned char c)
{
    if (c != (top_is_object(in) ? '}' : ']'))
        return -1;
    in->depth--;
    end_value(in);
    return 0;
}

/* Reads string bytes from P.  Returns where it stopped, or NULL when the
 * input is not JSON or memory ran out. */
static const unsigned char *string_bytes(struct hook_input *in, const unsigned char *p,
                                         const unsigned char *end)
{
    const unsigned char *run = p;
    unsigned char c;

    while (p < end && is_plain(*p))
        p++;
    if (p > run && take(in, run, (size_t)(p - run), (size_t)(p - run), 0) != 0)
        return NULL;
    if (p == end)
        return p;
    c = *p++;
    if (c == '"') {
        end_string(in);
        return p;
    }
    if (c == '\\') {
        in->state = ST_ESCAPE;
        return p;
    }
    /* Lead bytes and the range their first continuation byte must be in. */
    in->utf8_lo = 0x80;
    in->utf8_hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        in->utf8_left = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        in->utf8_left = 2;
        if (c == 0xE0)
            in->utf8_lo = 0xA0; /* overlong below */
        else if (c == 0xED)
            in->utf8_hi = 0x9F; /* surrogates above */
    } else if (c >= 0xF0 && c <= 0xF4) {
        in->utf8_left = 3;
        if (c == 0xF0)
            in->utf8_lo = 0x90; /* overlong below */
        else if (c == 0xF4)
            in->utf8_hi = 0x8F; /* past U+10FFFF above */
    } else {
        return NULL; /* a control character, a stray or an invalid byte */
    }
    in->seq[0] = c;
    in->seq_len = 1;
    in->state = ST_UTF8;
    return p;
}

/* One byte C of an escape (ST_ESCAPE, ST_HEX, ST_LOW_*).  Returns 0, or -1
 * when the input is not JSON or memory ran out. */
static int escape_byte(struct hook_input *in, unsigned char c)
{
    static const char simple[] = "\"\\/bfnrt";
    static const char value[] = "\"\\/\b\f\n\r\t";
    const char *at;
    int v;

    switch (in->state) {
    case ST_ESCAPE:
        if (c == 'u') {
            in->hex_left = 4;
            in->code = 0;
            in->state = ST_HEX;
            return 0;
        }
        at = c ? strchr(simple, c) : NULL;
        if (!at)
            return -1;
        in->state = ST_STRING;
        return take_code_point(in, (unsigned char)value[at - simple]);
    case ST_LOW_SLASH:
        if (c != '\\')
            return -1;
        in->state = ST_LOW_U;
        return 0;
    case ST_LOW_U:
        if (c != 'u')
            return -1;
        in->hex_left = 4;
        in->code = 0;
        in->state = ST_HEX;
        return 0;
    default: /* ST_HEX */
        v = hex_value((char)c);
        if (v < 0)
            return -1;
        in->code = in->code * 16 + (uint32_t)v;
        if (--in->hex_left > 0)
            return 0;
        if (in->high) {
            uint32_t high = in->high;
            if (in->code < 0xDC00 || in->code > 0xDFFF)
                return -1; /* a high surrogate without its low half */
            in->high = 0;
            in->state = ST_STRING;
            return take_code_point(in, 0x10000 + ((high - 0xD800) << 10) + (in->code - 0xDC00));
        }
        if (in->code >= 0xD800 && in->code <= 0xDBFF) {
            in->high = in->code;
            in->state = ST_LOW_SLASH;
            return 0;
        }
        if (in->code >= 0xDC00 && in->code <= 0xDFFF)
            return -1; /* a low surrogate alone */
        in->state = ST_STRING;
        return take_code_point(in, in->code);
    }
}

/* Reads number bytes from P.  Returns where it stopped (at the byte after
 * the number, which the next state reads), or NULL when the input is not
 * JSON. */
static const unsigned char *number_bytes(struct hook_input *in, const unsigned char *p,
                                         const unsigned char *end)
{
    while (p < end) {
        unsigned char c = *p;
        int digit = c >= '0' && c <= '9';
        switch (in->num_state) {
        case N_MINUS:
            if (!digit)
                return NULL;
            in->num_state = c == '0' ? N_ZERO : N_INT;
            break;
        case N_DOT:
        case N_ESIGN:
            if (!digit)
                return NULL;
            in->num_state = in->num_state == N_DOT ? N_FRAC : N_EXP;
            break;
        case N_E:
            if (c == '+' || c == '-')
                in->num_state = N_ESIGN;
            else if (digit)
                in->num_state = N_EXP;
            else
                return NULL;
            break;
        default: /* N_ZERO, N_INT, N_FRAC, N_EXP: the number may end here */
            if (digit && in->num_state != N_ZERO) {
                break;
            } else if (c == '.' && (in->num_state == N_ZERO || in->num_state == N_INT)) {
                in->num_state = N_DOT;
            } else if ((c == 'e' || c == 'E') && in->num_state != N_EXP) {
                in->num_state = N_E;
            } else if (digit) {
                return NULL; /* a leading zero */
            } else {
                end_value(in);
                return p;
            }
            break;
        }
        p++;
    }
    return p;
}

/* Keeps the input bytes while they are few enough.  Returns 0, or -1 when
 * memory ran out. */
static int keep_raw(struct hook_input *in, const void *data, size_t len)
{
    size_t had = (size_t)in->bytes;

    in->bytes += len;
    if (in->bytes > HOOK_INPUT_RAW_MAX) {
        free(in->raw);
        in->raw = NULL;
        return 0;
    }
    if (in->bytes + 1 > in->raw_cap) {
        size_t cap = in->raw_cap ? in->raw_cap : 4096;
        char *more;
        while (cap < in->bytes + 1)
            cap *= 2;
        more = realloc(in->raw, cap);
        if (!more)
            return -1;
        in->raw = more;
        in->raw_cap = cap;
    }
    memcpy(in->raw + had, data, len);
    in->raw[in->bytes] = '\0';
    return 0;
}

int hook_input_feed(struct hook_input *in, const void *data, size_t len)
{
    const unsigned char *p = data, *end = p + len;

    if (in->failed)
        return -1;
    if (len == 0)
        return 0;
    if (keep_raw(in, data, len) != 0)
        goto fail;
    while (p < end) {
        unsigned char c = *p;
        int rv = 0;
        switch (in->state) {
        case ST_STRING:
            p = string_bytes(in, p, end);
            if (!p)
                goto fail;
            continue;
        case ST_NUMBER:
            p = number_bytes(in, p, end);
            if (!p)
                goto fail;
            continue;
        case ST_UTF8:
            if (c < in->utf8_lo || c > in->utf8_hi)
                goto fail;
            in->seq[in->seq_len++] = c;
            in->utf8_lo = 0x80;
            in->utf8_hi = 0xBF;
            if (--in->utf8_left == 0) {
                in->state = ST_STRING;
                rv = take(in, in->seq, in->seq_len, 1, 1);
            }
            break;
        case ST_ESCAPE:
        case ST_HEX:
        case ST_LOW_SLASH:
        case ST_LOW_U:
            rv = escape_byte(in, c);
            break;
        case ST_LITERAL:
            if (c != (unsigned char)in->literal[in->literal_at])
                goto fail;
            if (in->literal[++in->literal_at] == '\0')
                end_value(in);
            break;
        default:
            if (is_space(c))
                break;
            switch (in->state) {
            case ST_TOP:
                rv = c == '{' ? start_value(in, c) : -1;
                break;
            case ST_VALUE:
                rv = start_value(in, c);
                break;
            case ST_VALUE_OR_END:
                rv = c == ']' ? close_container(in, c) : start_value(in, c);
                break;
            case ST_KEY:
                rv = start_key(in, c);
                break;
            case ST_KEY_OR_END:
                rv = c == '}' ? close_container(in, c) : start_key(in, c);
                break;
            case ST_COLON:
                if (c != ':')
                    goto fail;
                in->state = ST_VALUE;
                break;
            case ST_NEXT:
                if (c == ',')
                    in->state = top_is_object(in) ? ST_KEY : ST_VALUE;
                else
                    rv = close_container(in, c);
                break;
            default: /* ST_DONE: nothing but whitespace after the object */
                goto fail;
            }
            break;
        }
        if (rv != 0)
            goto fail;
        p++;
    }
    return 0;
fail:
    in->failed = 1;
    return -1;
}

int hook_input_end(const struct hook_input *in)
{
    return !in->failed && in->state == ST_DONE ? 0 : -1;
}

const char *hook_input_string(const struct hook_input *in, enum hook_member m)
{
    const struct hook_input_text *t = &in->member[m];

    return t->cut ? NULL : t->text;
}

const char *hook_input_prefix(const struct hook_input *in, enum hook_member m)
{
    return in->member[m].text;
}

const char *hook_input_raw(const struct hook_input *in, size_t *len)
{
    *len = in->raw ? (size_t)in->bytes : 0;
    return in->raw;
}
