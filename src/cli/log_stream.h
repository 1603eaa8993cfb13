/* log_stream: a session's pane from the retained tail, to the live edge or
 * following, resuming after lag drops (agenthub log and the MCP log tool). */
#ifndef AGENTHUB_CLI_LOG_STREAM_H
#define AGENTHUB_CLI_LOG_STREAM_H

#include <stdint.h>

#include "cli/client.h"

struct log_stream {
    struct cli_env *env; /* connected */
    const char *session_id;
    int follow;
    uint32_t tail; /* 0: everything retained */
    /* Returns 0, or -1 to stop the stream (the reader went away). */
    int (*emit)(void *arg, const Compass__V1__AgentSessionFrame *frame);
    void *arg;
    /* State: the last delivered seq (frames at or below it are skipped) and,
     * without follow, the live edge read from GetAgentStatus.last_seq. */
    uint64_t last_seq;
    uint64_t edge_seq;
    int stopped; /* emit asked to stop */
};

/* Streams frames to emit.  Without follow it stops once the live edge is
 * reached (or the session ends); with follow it returns only when the session
 * ends, the server fails or emit asks to stop (OK).  Returns the gRPC
 * status; RESULT gets details. */
int log_stream_run(struct log_stream *stream, struct grpc_client_result *result);

#endif
