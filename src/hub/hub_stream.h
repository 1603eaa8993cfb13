/* hub_stream: what the hub needs from an open call, so it never sees the
 * transport that carries it.
 *
 * A few hub modules end a call (a stream whose token was revoked, a Runner
 * control stream replaced by a newer one), write to it (commands on a
 * Runner's control stream), read its headers (the bearer token, again) or
 * ask whether it has ended (a re-check leaves an ended call alone).  The
 * handlers hand them a struct hub_stream: the call as an opaque pointer
 * and the ops that act on it, which rpc implements on grpc_call
 * (rpc_stream in rpc/rpc.h).
 *
 * The statuses a hub module ends a call with are enum grpc_status
 * (common/status.h), the one set every layer answers with, so a status
 * passes through to the wire unchanged; the gate's refusal statuses
 * (store/gate.h) are the same enum. */
#ifndef AGENTHUB_HUB_STREAM_H
#define AGENTHUB_HUB_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "store/auth.h"

struct hub_stream_ops {
    /* Ends CALL with STATUS and MESSAGE (NULL: none).  Safe on a call that
     * has already ended. */
    void (*finish)(void *call, enum grpc_status status, const char *message);
    /* Queues one encoded message of LEN bytes on CALL.  Returns 0, or -1
     * when the call cannot take it (it has ended, or memory is short). */
    int (*send)(void *call, const uint8_t *bytes, size_t len);
    /* Asks for CALL's writable callback once its send queue is empty. */
    void (*want_writable)(void *call);
    /* Sets the pointer CALL's callbacks are given (NULL: nothing of the
     * hub's is attached any more). */
    void (*set_user)(void *call, void *user);
    /* The value of request header NAME (lowercase), or NULL. */
    const char *(*metadata)(void *call, const char *name);
    /* The door CALL arrived on. */
    enum auth_door (*door)(void *call);
    /* 1 once CALL was finished (by a handler, the hub or the call layer),
     * else 0: a stream re-checked after that is left alone. */
    int (*finished)(void *call);
};

struct hub_stream {
    const struct hub_stream_ops *ops;
    void *call;
};

#endif
