/* auth: bearer tokens -> subjects.
 *
 * A token is stored only as its SHA-256.  A call's `authorization` header
 * value "Bearer TOKEN" is hashed and resolved through the store; the door it
 * arrived on must match the subject's kind (accounts on the public door,
 * Runners on the Runner door).  Every way a credential can be wrong answers
 * the same AUTH_UNAUTHENTICATED, so the RPC layer cannot leak which. */
#ifndef AGENTHUB_AUTH_H
#define AGENTHUB_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

enum auth_result {
    AUTH_OK = 0,
    AUTH_UNAUTHENTICATED = 1, /* missing, malformed, unknown, revoked, wrong door */
    AUTH_FAULT = 2,           /* the store could not answer: UNAVAILABLE */
};

enum auth_door {
    AUTH_DOOR_PUBLIC = 0, /* accounts only */
    AUTH_DOOR_RUNNER = 1, /* Runners only */
};

/* The grpc-message of every UNAUTHENTICATED answer. */
extern const char AUTH_UNAUTHENTICATED_MESSAGE[];

/* Length of a minted token's text (32 bytes, base64url without padding). */
#define AUTH_TOKEN_TEXT_LEN 43
/* Longest token accepted in a header. */
#define AUTH_TOKEN_MAX 1024

/* Finds the token in an authorization header value VALUE of LEN bytes:
 * "Bearer" (any case), one or more spaces, then 1..AUTH_TOKEN_MAX visible
 * ASCII characters and nothing after.  Returns 0 and sets *TOKEN and *TOKEN_LEN
 * (pointing into VALUE), or -1 when malformed. */
int auth_parse_bearer(const char *value, size_t len, const char **token, size_t *token_len);

/* OUT = SHA-256(TOKEN).  Returns 0, or -1 if OpenSSL fails. */
int auth_hash_token(const char *token, size_t len, uint8_t out[STORE_HASH_LEN]);

/* The store's one door to OpenSSL (nothing else in src/store includes it):
 * OUT = SHA-256 of LEN bytes at DATA.  Returns 0, or -1 if OpenSSL fails. */
int auth_sha256(const void *data, size_t len, uint8_t out[STORE_HASH_LEN]);

/* Fills BUF with LEN bytes from the cryptographic random generator.
 * Returns 0, or -1 when the generator fails. */
int auth_random(void *buf, size_t len);

/* 1 when the LEN bytes at A and B are equal, compared in constant time so
 * no code path compares secrets with memcmp; else 0. */
int auth_equal(const void *a, const void *b, size_t len);

/* Resolves an authorization header value (NULL = header absent) arriving on
 * DOOR.  AUTH_OK fills *OUT; AUTH_FAULT when the store read failed (never
 * reported as unauthenticated, so a client retries instead of giving up). */
enum auth_result auth_authenticate(struct store *s, enum auth_door door, const char *header_value,
                                   size_t len, struct store_subject *out);

/* Writes a fresh token (AUTH_TOKEN_TEXT_LEN chars and a NUL) into OUT, and
 * its hash into HASH.  Returns 0, or -1 when the random generator fails or
 * OUTLEN is too small. */
int auth_mint_token(char *out, size_t outlen, uint8_t hash[STORE_HASH_LEN]);

/* 1 when the LEN bytes at TEXT have a token's shape: 1..AUTH_TOKEN_MAX
 * visible ASCII characters, as a bearer header and an import file take
 * them.  Text of any other shape can never have been presented. */
int auth_token_text_valid(const char *text, size_t len);

/* Mints a token for the subject KIND ID and binds its hash to it: the one
 * way `agenthub admin token issue` and the IssueToken call make a token.
 * Returns STORE_OK with the text (AUTH_TOKEN_TEXT_LEN chars and a NUL) in
 * OUT and its hash in HASH; STORE_INVALID for a bad kind or id;
 * STORE_NOT_FOUND when no such account or Runner exists; STORE_FAULT when
 * the store or the random generator fails (OUT then holds nothing). */
enum store_rc auth_issue_token(struct store *s, enum store_subject_kind kind, const char *id,
                               char out[AUTH_TOKEN_TEXT_LEN + 1], uint8_t hash[STORE_HASH_LEN]);

/* Revokes the token whose text is the LEN bytes at TOKEN, by its hash
 * (HASH receives it).  *WAS receives the subject it spoke for when it was
 * live (kind STORE_SUBJECT_NONE when it was revoked already), and *CHANGED
 * (may be NULL) 1 when this call revoked it.  Returns STORE_OK (revoked
 * now or before), STORE_NOT_FOUND (never issued), STORE_INVALID (not a
 * token's shape) or STORE_FAULT. */
enum store_rc auth_revoke_token(struct store *s, const char *token, size_t len,
                                uint8_t hash[STORE_HASH_LEN], struct store_subject *was,
                                int *changed);

/* Overwrites LEN bytes at P with zeros in a way the compiler keeps, for
 * token text that is no longer needed. */
void auth_forget(void *p, size_t len);

/* A minted session id: "s-" and 32 lowercase hex digits (16 random bytes). */
#define AUTH_SESSION_ID_LEN 34

/* Writes a fresh session id (AUTH_SESSION_ID_LEN chars and a NUL) into OUT,
 * for both store backends.  Returns 0, or -1 when the random generator
 * fails (OUT then unspecified). */
int auth_mint_session_id(char out[STORE_ID_MAX]);

#endif
