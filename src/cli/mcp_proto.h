/* mcp_proto: the MCP server's message handling (pure; the tools and the
 * stdio loop are the caller's).  Newline-delimited JSON-RPC 2.0: initialize
 * with version negotiation, notifications/initialized, ping, tools/list and
 * tools/call for agenthub_agent_log and agenthub_agent_emit.  A JSON-RPC
 * batch (an array, as protocol 2025-03-26 allows) is answered with an array.
 * Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05. */
#ifndef AGENTHUB_CLI_MCP_PROTO_H
#define AGENTHUB_CLI_MCP_PROTO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define MCP_PARSE_ERROR      (-32700)
#define MCP_INVALID_REQUEST  (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS   (-32602)

/* The tools.  Each returns 0 with *TEXT (malloc'd) the result, or -1 with
 * *TEXT (malloc'd, may be NULL) saying why the tool failed. */
struct mcp_tools {
    int (*log)(void *arg, const char *session, uint32_t tail, char **text);
    int (*emit)(void *arg, const char *session, const char *type, json_t *data, char **text);
    void *arg;
};

struct mcp_server {
    const struct mcp_tools *tools;
    int initialized;   /* notifications/initialized seen */
    char protocol[16]; /* the negotiated version, "" before initialize */
};

void mcp_server_init(struct mcp_server *server, const struct mcp_tools *tools);

/* Handles one line (without its newline).  Returns the response to write as
 * one line (malloc'd, no newline), or NULL when none is due (notifications,
 * responses, blank lines). */
char *mcp_handle_line(struct mcp_server *server, const char *line, size_t len);

#endif
