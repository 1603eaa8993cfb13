/* CompassService's token administration (the public door): IssueToken and
 * RevokeToken, for admin accounts only.
 *
 * The work is auth.h's (the same functions `agenthub admin token` uses);
 * a handler checks the caller and the request, calls it, answers, and
 * writes one audit line per call.  A token's text is never logged: the
 * audit names a token by the first 16 hex digits of its SHA-256, as
 * `agenthub admin token list` shows it. */

#include <string.h>

#include "common/hex.h"
#include "common/log.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/grpc.h"
#include "hub/hub.h"
#include "hub/stream_guard.h"
#include "rpc/rpc.h"
#include "store/auth.h"
#include "store/gate.h"
#include "store/store.h"

/* Hex digits of a hash the audit shows: enough to find the row. */
#define AUDIT_HASH_DIGITS 16

static const char *kind_name(enum store_subject_kind kind)
{
    return kind == STORE_SUBJECT_RUNNER ? "runner" : "account";
}

static void hash_prefix(const uint8_t hash[STORE_HASH_LEN], char out[AUDIT_HASH_DIGITS + 1])
{
    char full[2 * STORE_HASH_LEN + 1];

    hex_encode(hash, STORE_HASH_LEN, full);
    memcpy(out, full, AUDIT_HASH_DIGITS);
    out[AUDIT_HASH_DIGITS] = '\0';
}

/* Authenticates CALL and requires an admin account.  Returns 0 with
 * *CALLER filled, or -1 after finishing the call (and auditing a refused
 * non-admin: who tried is worth a line too). */
static int require_admin(struct grpc_call *call, const char *method, struct store_subject *caller)
{
    if (rpc_authenticate(call, caller) != 0)
        return -1;
    if (!caller->is_admin) {
        log_info("audit: %s by account %s refused: not an admin", method, caller->id);
        grpc_call_finish(call, GRPC_STATUS_PERMISSION_DENIED,
                         "only an admin account may manage tokens");
        return -1;
    }
    return 0;
}

/* Finishes CALL with INVALID_ARGUMENT MESSAGE and audits the refusal
 * (MESSAGE never holds request text). */
static void refuse_invalid(struct grpc_call *call, const char *method,
                           const struct store_subject *caller, const char *message)
{
    log_info("audit: %s by account %s refused: %s", method, caller->id, message);
    grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT, message);
}

static void issue_token_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__IssueTokenRequest *request = (const Compass__V1__IssueTokenRequest *)message;
    Compass__V1__IssueTokenResponse response = COMPASS__V1__ISSUE_TOKEN_RESPONSE__INIT;
    struct hub *ctx = rpc_hub(call);
    char token[AUTH_TOKEN_TEXT_LEN + 1], digits[AUDIT_HASH_DIGITS + 1], reason[200];
    uint8_t hash[STORE_HASH_LEN];
    struct store_subject caller;
    enum store_subject_kind kind;
    const char *id;
    int rc;

    if (require_admin(call, "IssueToken", &caller) != 0)
        return;
    if (request->account_id[0] && request->runner_id[0]) {
        refuse_invalid(call, "IssueToken", &caller, "set account_id or runner_id, not both");
        return;
    }
    if (!request->account_id[0] && !request->runner_id[0]) {
        refuse_invalid(call, "IssueToken", &caller, "account_id is required");
        return;
    }
    kind = request->account_id[0] ? STORE_SUBJECT_ACCOUNT : STORE_SUBJECT_RUNNER;
    id = request->account_id[0] ? request->account_id : request->runner_id;
    if (!store_id_valid(id)) {
        snprintf(reason, sizeof(reason),
                 "%s_id must be 1 to %d printable ASCII characters without spaces", kind_name(kind),
                 STORE_ID_MAX - 1);
        refuse_invalid(call, "IssueToken", &caller, reason);
        return;
    }
    rc = auth_issue_token(ctx->store, kind, id, token, hash);
    if (rc == STORE_NOT_FOUND) {
        log_info("audit: IssueToken by account %s for %s %s refused: no such %s", caller.id,
                 kind_name(kind), id, kind_name(kind));
        snprintf(reason, sizeof(reason), "no %s with id %s", kind_name(kind), id);
        grpc_call_finish(call, GRPC_STATUS_NOT_FOUND, reason);
        return;
    }
    if (rc != STORE_OK) {
        log_warn("audit: IssueToken by account %s for %s %s failed: the store %s", caller.id,
                 kind_name(kind), id, store_rc_name(rc));
        grpc_call_finish(call, rc == STORE_FAULT ? GRPC_STATUS_UNAVAILABLE : GRPC_STATUS_INTERNAL,
                         rc == STORE_FAULT ? GATE_FAULT_MESSAGE : "cannot store the token");
        return;
    }
    hash_prefix(hash, digits);
    log_info("audit: IssueToken by account %s: issued token %s for %s %s", caller.id, digits,
             kind_name(kind), id);
    response.token = token;
    grpc_call_send(call, &response.base);
    auth_forget(token, sizeof(token)); /* encoded into the response: not needed again */
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void revoke_token_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__RevokeTokenRequest *request =
        (const Compass__V1__RevokeTokenRequest *)message;
    static const Compass__V1__RevokeTokenResponse response =
        COMPASS__V1__REVOKE_TOKEN_RESPONSE__INIT;
    struct hub *ctx = rpc_hub(call);
    char digits[AUDIT_HASH_DIGITS + 1], reason[100];
    uint8_t hash[STORE_HASH_LEN];
    struct store_subject caller, was;
    size_t len = strlen(request->token);
    int rc, changed = 0;

    if (require_admin(call, "RevokeToken", &caller) != 0)
        return;
    if (len == 0) {
        refuse_invalid(call, "RevokeToken", &caller, "token is required");
        return;
    }
    if (len > AUTH_TOKEN_MAX) {
        snprintf(reason, sizeof(reason), "token is longer than %d characters", AUTH_TOKEN_MAX);
        refuse_invalid(call, "RevokeToken", &caller, reason);
        return;
    }
    if (!auth_token_text_valid(request->token, len)) {
        refuse_invalid(call, "RevokeToken", &caller,
                       "token must be visible ASCII characters without spaces");
        return;
    }
    rc = auth_revoke_token(ctx->store, request->token, len, hash, &was, &changed);
    hash_prefix(hash, digits);
    if (rc == STORE_NOT_FOUND) {
        /* compass's rule: revoking what was never issued is NOT_FOUND (an
         * admin asks; nobody else learns which tokens exist). */
        log_info("audit: RevokeToken by account %s: token %s refused: no such token", caller.id,
                 digits);
        grpc_call_finish(call, GRPC_STATUS_NOT_FOUND, "no such token");
        return;
    }
    if (rc != STORE_OK) {
        log_warn("audit: RevokeToken by account %s: token %s failed: the store %s", caller.id,
                 digits, store_rc_name(rc));
        grpc_call_finish(call, rc == STORE_FAULT ? GRPC_STATUS_UNAVAILABLE : GRPC_STATUS_INTERNAL,
                         rc == STORE_FAULT ? GATE_FAULT_MESSAGE : "cannot revoke the token");
        return;
    }
    if (changed && was.kind != STORE_SUBJECT_NONE)
        log_info("audit: RevokeToken by account %s: revoked token %s of %s %s", caller.id, digits,
                 kind_name(was.kind), was.id);
    else if (changed)
        log_info("audit: RevokeToken by account %s: revoked token %s", caller.id, digits);
    else
        log_info("audit: RevokeToken by account %s: token %s was revoked already", caller.id,
                 digits);
    /* This server's own commit does not move its change poll: end the
     * streams opened with the token now.  Other nodes hear the store's
     * change notification. */
    if (changed)
        stream_guards_recheck(ctx->guards);
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static const struct grpc_method token_methods[] = {
    {
        .path = "/compass.v1.CompassService/IssueToken",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__issue_token_request__descriptor,
        .response_type = &compass__v1__issue_token_response__descriptor,
        .on_message = issue_token_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.CompassService/RevokeToken",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__revoke_token_request__descriptor,
        .response_type = &compass__v1__revoke_token_response__descriptor,
        .on_message = revoke_token_on_message,
        .needs_caller = 1,
    },
};

int compass_tokens_register(struct rpc_context *rpc, struct grpc_door *door)
{
    (void)rpc;
    for (size_t i = 0; i < sizeof(token_methods) / sizeof(token_methods[0]); i++)
        if (grpc_door_register(door, &token_methods[i]) != 0)
            return -1;
    return 0;
}
