/* What jansson reads of a hook's stdin, to check src/cli/hook_input.c
 * against (test_cli_hook_input.c and the fuzz_hook_map target).
 *
 * The reader accepts two things jansson refuses by default: numbers of any
 * size and U+0000 inside strings.  So jansson reads, with JSON_ALLOW_NUL, a
 * tamed copy of the input: every valid number outside strings becomes 0,
 * and a \u0000 in a key (which jansson refuses even then) becomes \u0001.
 * Neither changes whether the input is JSON, nor a value the reader
 * keeps. */
#ifndef AGENTHUB_TESTS_HOOK_INPUT_ORACLE_H
#define AGENTHUB_TESTS_HOOK_INPUT_ORACLE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/hook_input.h"

static const char *const oracle_members[HOOK_MEMBERS] = {
    "session_id", "hook_event_name", "tool_name", "source",     "notification_type", "message",
    "reason",     "error",           "trigger",   "agent_type", "mcp_server_name",   "action",
};

/* 1 when T[0..N) is exactly a JSON number. */
static int oracle_is_number(const char *t, size_t n)
{
    size_t i = 0, digits;

    if (i < n && t[i] == '-')
        i++;
    if (i < n && t[i] == '0') {
        i++;
    } else {
        for (digits = 0; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            digits++;
        if (!digits)
            return 0;
    }
    if (i < n && t[i] == '.') {
        for (i++, digits = 0; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            digits++;
        if (!digits)
            return 0;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        for (digits = 0; i < n && t[i] >= '0' && t[i] <= '9'; i++)
            digits++;
        if (!digits)
            return 0;
    }
    return i == n;
}

/* 1 when the string that ends just before T[AT] is followed by ':'. */
static int oracle_is_key(const char *t, size_t len, size_t at)
{
    while (at < len && strchr(" \t\n\r", t[at]) && t[at] != '\0')
        at++;
    return at < len && t[at] == ':';
}

/* The tamed copy of TEXT (LEN bytes); *OUT_LEN is its length.  Caller frees. */
static char *oracle_tame(const char *text, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    size_t i = 0, o = 0;

    while (i < len) {
        if (text[i] == '"') {
            size_t end = i + 1;
            int key;
            while (end < len && text[end] != '"')
                end += text[end] == '\\' && end + 1 < len ? 2 : 1;
            key = end < len && oracle_is_key(text, len, end + 1);
            out[o++] = text[i++];
            while (i < end) {
                if (text[i] == '\\' && i + 1 < end) {
                    if (key && text[i + 1] == 'u' && i + 6 <= end &&
                        memcmp(text + i + 2, "0000", 4) == 0) {
                        memcpy(out + o, "\\u0001", 6);
                        o += 6;
                        i += 6;
                        continue;
                    }
                    out[o++] = text[i++];
                }
                out[o++] = text[i++];
            }
            if (i < len)
                out[o++] = text[i++];
        } else if (strchr("-+.0123456789eE", text[i]) && text[i] != '\0') {
            size_t j = i;
            while (j < len && text[j] != '\0' && strchr("-+.0123456789eE", text[j]))
                j++;
            if (oracle_is_number(text + i, j - i)) {
                out[o++] = '0';
            } else {
                memcpy(out + o, text + i, j - i);
                o += j - i;
            }
            i = j;
        } else {
            out[o++] = text[i++];
        }
    }
    *out_len = o;
    return out;
}

/* VALUE (N bytes) as the reader keeps it: up to the first U+0000 and at
 * most HOOK_INPUT_STRING_MAX bytes, cut between characters.  *CUT is 1 when
 * that is not all of it. */
static size_t oracle_kept_len(const char *value, size_t n, int *cut)
{
    const char *nul = memchr(value, '\0', n);
    size_t keep = nul ? (size_t)(nul - value) : n;

    *cut = keep < n;
    if (keep > HOOK_INPUT_STRING_MAX) {
        keep = HOOK_INPUT_STRING_MAX;
        while (keep > 0 && ((unsigned char)value[keep] & 0xC0) == 0x80)
            keep--;
        *cut = 1;
    }
    return keep;
}

/* Checks IN, which read TEXT (LEN bytes; ACCEPTED: hook_input_end returned
 * 0), against jansson.  Returns NULL when they agree, else what differs
 * (in a static buffer). */
static const char *oracle_check(const char *text, size_t len, const struct hook_input *in,
                                int accepted)
{
    static char why[160];
    size_t tamed_len, raw_len;
    char *tamed = oracle_tame(text, len, &tamed_len);
    json_t *j = json_loadb(tamed, tamed_len, JSON_ALLOW_NUL, NULL);
    /* jansson drops a NUL byte that follows a number or a literal (its
     * stream marks an empty buffer with one); a NUL byte is never JSON. */
    int expect = json_is_object(j) && !memchr(text, '\0', len);
    const char *raw;

    free(tamed);
    why[0] = '\0';
    if (expect != accepted) {
        snprintf(why, sizeof(why), "jansson %s, the reader %s", expect ? "accepts" : "refuses",
                 accepted ? "accepts" : "refuses");
        goto out;
    }
    if (!expect)
        goto out;
    for (int m = 0; m < HOOK_MEMBERS; m++) {
        const json_t *v = json_object_get(j, oracle_members[m]);
        const char *whole = hook_input_string(in, m), *prefix = hook_input_prefix(in, m);
        size_t keep;
        int cut;
        if (!json_is_string(v)) {
            if (whole || prefix)
                snprintf(why, sizeof(why), "%s: kept a value that is no string", oracle_members[m]);
            if (whole || prefix)
                goto out;
            continue;
        }
        keep = oracle_kept_len(json_string_value(v), json_string_length(v), &cut);
        if (!prefix || strlen(prefix) != keep || memcmp(prefix, json_string_value(v), keep) != 0 ||
            (cut ? whole != NULL : whole != prefix)) {
            snprintf(why, sizeof(why), "%s: kept %.40s (%zu bytes), jansson reads %zu bytes",
                     oracle_members[m], prefix ? prefix : "(null)", prefix ? strlen(prefix) : 0,
                     json_string_length(v));
            goto out;
        }
    }
    {
        const json_t *p = json_object_get(j, "prompt");
        uint64_t n = 0;
        if (json_is_string(p)) {
            const unsigned char *s = (const unsigned char *)json_string_value(p);
            for (size_t i = 0; i < json_string_length(p); i++)
                n += (s[i] & 0xC0) != 0x80;
        }
        if (in->has_prompt != json_is_string(p) || in->prompt_length != n) {
            snprintf(why, sizeof(why), "prompt: %d/%llu code points, jansson %d/%llu",
                     in->has_prompt, (unsigned long long)in->prompt_length, json_is_string(p),
                     (unsigned long long)n);
            goto out;
        }
    }
    if (in->is_interrupt != json_is_true(json_object_get(j, "is_interrupt"))) {
        snprintf(why, sizeof(why), "is_interrupt: %d, jansson reads %s", in->is_interrupt,
                 json_is_true(json_object_get(j, "is_interrupt")) ? "true" : "not true");
        goto out;
    }
    raw = hook_input_raw(in, &raw_len);
    if (in->bytes != len ||
        (len <= HOOK_INPUT_RAW_MAX ? !raw || raw_len != len || memcmp(raw, text, len) != 0
                                   : raw != NULL))
        snprintf(why, sizeof(why), "raw: %zu bytes kept of %zu", raw ? raw_len : 0, len);
out:
    json_decref(j);
    return why[0] ? why : NULL;
}

#endif
