/* hub_fixture: a whole hub on a real SQLite store and the memory log, and
 * a fake call it sees through hub_stream.h, for the hub suites. */
#ifndef AGENTHUB_TEST_HUB_FIXTURE_H
#define AGENTHUB_TEST_HUB_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "core/bus.h"
#include "core/session.h"
#include "hub/hub.h"
#include "hub/hub_stream.h"
#include "store_fixture.h"

struct event_base;

#define FAKE_CALL_SENT_MAX 16

/* What the hub did to one call. */
struct fake_call {
    int finished;
    enum grpc_status status;
    char message[256];
    int sent;                                /* messages queued */
    uint8_t *sent_bytes[FAKE_CALL_SENT_MAX]; /* the first ones, copied */
    size_t sent_len[FAKE_CALL_SENT_MAX];
    int writable_asked;
    void *user;
    int refuse_send;         /* send fails, as on a call that cannot take more */
    char authorization[160]; /* the authorization header ("": none) */
    enum auth_door door;
};

extern const struct hub_stream_ops fake_stream_ops;

/* A call on the Runner door with "Bearer TOKEN". */
void fake_call_init(struct fake_call *c, const char *token);
struct hub_stream fake_stream(struct fake_call *c);
void fake_call_free(struct fake_call *c);

/* The demo world (store_fixture.h), its sessions' registry, the memory
 * log, an event loop for the Runners' timers and the stream guards. */
struct hub_fixture {
    struct store_fixture fx;
    struct session_registry sessions;
    struct bus bus;
    struct event_base *base;
    struct hub hub;
};

/* Aborts on failure. */
void hub_fixture_open(struct hub_fixture *h);
void hub_fixture_close(struct hub_fixture *h);

/* Runs the event loop for MS milliseconds. */
void hub_fixture_run(struct hub_fixture *h, int ms);

/* The value of the /metrics line that starts with NAME and a space (NAME
 * may carry labels), from hub_write_counters and hub_write_metrics; -1
 * when there is none. */
long long hub_fixture_metric(struct hub_fixture *h, const char *name);

/* The Runner subject ID. */
struct store_subject hub_fixture_runner(const char *id);

/* The newest seq of the log of SESSION_ID, or 0 when it is not in the
 * registry or holds nothing. */
uint64_t hub_fixture_newest(struct hub_fixture *h, const char *session_id);

#endif
