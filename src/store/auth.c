/* auth: see auth.h. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

#include "store/auth.h"

#include "common/hex.h"

const char AUTH_UNAUTHENTICATED_MESSAGE[] = "missing or invalid credentials";

int auth_parse_bearer(const char *value, size_t len, const char **token, size_t *token_len)
{
    static const char scheme[] = "Bearer";
    const size_t slen = sizeof(scheme) - 1;
    size_t i;

    if (!value || len <= slen || strncasecmp(value, scheme, slen) != 0 || value[slen] != ' ')
        return -1;
    i = slen;
    while (i < len && value[i] == ' ')
        i++;
    if (i == len || len - i > AUTH_TOKEN_MAX)
        return -1;
    *token = value + i;
    *token_len = len - i;
    /* Visible ASCII only: no spaces, controls or NULs inside the token. */
    return auth_token_text_valid(*token, *token_len) ? 0 : -1;
}

int auth_token_text_valid(const char *text, size_t len)
{
    size_t i;

    if (!text || len == 0 || len > AUTH_TOKEN_MAX)
        return 0;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c <= 0x20 || c >= 0x7f)
            return 0;
    }
    return 1;
}

int auth_sha256(const void *data, size_t len, uint8_t out[STORE_HASH_LEN])
{
    unsigned int n = 0;

    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != STORE_HASH_LEN)
        return -1;
    return 0;
}

int auth_random(void *buf, size_t len)
{
    if (len > INT_MAX || RAND_bytes(buf, (int)len) != 1)
        return -1;
    return 0;
}

int auth_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

int auth_hash_token(const char *token, size_t len, uint8_t out[STORE_HASH_LEN])
{
    return auth_sha256(token, len, out);
}

enum auth_result auth_authenticate(struct store *s, enum auth_door door, const char *header_value,
                                   size_t len, struct store_subject *out)
{
    uint8_t hash[STORE_HASH_LEN];
    struct store_subject subj;
    const char *token;
    size_t token_len;
    int rc;

    if (!header_value || auth_parse_bearer(header_value, len, &token, &token_len) != 0)
        return AUTH_UNAUTHENTICATED;
    if (auth_hash_token(token, token_len, hash) != 0)
        return AUTH_FAULT;
    rc = store_token_resolve(s, hash, &subj);
    if (rc == STORE_NOT_FOUND)
        return AUTH_UNAUTHENTICATED;
    if (rc != STORE_OK)
        return AUTH_FAULT;
    /* A Runner token is no account credential and vice versa: a door that
     * admitted the other kind would hand its caller an identity it has no
     * gate for. */
    if ((door == AUTH_DOOR_PUBLIC && subj.kind != STORE_SUBJECT_ACCOUNT) ||
        (door == AUTH_DOOR_RUNNER && subj.kind != STORE_SUBJECT_RUNNER))
        return AUTH_UNAUTHENTICATED;
    *out = subj;
    return AUTH_OK;
}

int auth_mint_token(char *out, size_t outlen, uint8_t hash[STORE_HASH_LEN])
{
    unsigned char raw[32];
    unsigned char b64[48];
    int n, i;

    if (outlen < AUTH_TOKEN_TEXT_LEN + 1)
        return -1;
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return -1;
    n = EVP_EncodeBlock(b64, raw, sizeof(raw)); /* 44 chars, one '=' */
    OPENSSL_cleanse(raw, sizeof(raw));
    if (n != 44)
        return -1;
    for (i = 0; i < AUTH_TOKEN_TEXT_LEN; i++) {
        char c = (char)b64[i];
        out[i] = c == '+' ? '-' : c == '/' ? '_' : c;
    }
    out[AUTH_TOKEN_TEXT_LEN] = '\0';
    OPENSSL_cleanse(b64, sizeof(b64));
    return auth_hash_token(out, AUTH_TOKEN_TEXT_LEN, hash);
}

int auth_mint_session_id(char out[STORE_ID_MAX])
{
    uint8_t raw[(AUTH_SESSION_ID_LEN - 2) / 2];

    _Static_assert(AUTH_SESSION_ID_LEN < STORE_ID_MAX, "a minted id fits a store id");
    if (auth_random(raw, sizeof(raw)) != 0)
        return -1;
    out[0] = 's';
    out[1] = '-';
    hex_encode(raw, sizeof(raw), out + 2);
    return 0;
}

enum store_rc auth_issue_token(struct store *s, enum store_subject_kind kind, const char *id,
                               char out[AUTH_TOKEN_TEXT_LEN + 1], uint8_t hash[STORE_HASH_LEN])
{
    int rc;

    if ((kind != STORE_SUBJECT_ACCOUNT && kind != STORE_SUBJECT_RUNNER) || !store_id_valid(id))
        return STORE_INVALID;
    /* token_add alone would answer INVALID for a missing subject; ask
     * first so the caller can say "no such account" instead. */
    rc = s->ops->exists(
        s->impl, kind == STORE_SUBJECT_ACCOUNT ? STORE_ENTITY_ACCOUNT : STORE_ENTITY_RUNNER, id);
    if (rc != STORE_OK)
        return rc;
    if (auth_mint_token(out, AUTH_TOKEN_TEXT_LEN + 1, hash) != 0) {
        out[0] = '\0';
        return STORE_FAULT;
    }
    rc = s->ops->token_add(s->impl, hash, kind, id, NULL);
    if (rc != STORE_OK) {
        /* Removed between the two statements (INVALID), or not stored: the
         * text names nothing and must not be handed out. */
        auth_forget(out, AUTH_TOKEN_TEXT_LEN + 1);
        return rc == STORE_INVALID ? STORE_NOT_FOUND : rc;
    }
    return STORE_OK;
}

enum store_rc auth_revoke_token(struct store *s, const char *token, size_t len,
                                uint8_t hash[STORE_HASH_LEN], struct store_subject *was,
                                int *changed)
{
    int rc;

    memset(was, 0, sizeof(*was));
    was->kind = STORE_SUBJECT_NONE;
    if (changed)
        *changed = 0;
    if (!auth_token_text_valid(token, len))
        return STORE_INVALID;
    if (auth_hash_token(token, len, hash) != 0)
        return STORE_FAULT;
    /* Whom it spoke for, for the caller's audit line; a revoked token
     * resolves to nothing, which is what *WAS then says. */
    rc = store_token_resolve(s, hash, was);
    if (rc == STORE_FAULT)
        return rc;
    if (rc != STORE_OK) {
        memset(was, 0, sizeof(*was));
        was->kind = STORE_SUBJECT_NONE;
    }
    return s->ops->token_revoke(s->impl, hash, changed);
}

void auth_forget(void *p, size_t len)
{
    OPENSSL_cleanse(p, len);
}
