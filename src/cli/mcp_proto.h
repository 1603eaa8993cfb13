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
#include <stdio.h>

#define MCP_PARSE_ERROR      (-32700)
#define MCP_INVALID_REQUEST  (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS   (-32602)
#define MCP_INTERNAL_ERROR   (-32603)

/* The longest input line (one JSON-RPC message) the server reads. */
#define MCP_LINE_MAX (1024 * 1024)

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

enum mcp_read {
    MCP_READ_EOF = -1,     /* nothing more to read */
    MCP_READ_LINE = 0,     /* *LEN bytes in *BUF, NUL-terminated, newline removed */
    MCP_READ_TOO_LONG = 1, /* over MCP_LINE_MAX: read to its end and discarded */
    MCP_READ_NOMEM = 2,    /* memory ran out: read to its end and discarded */
};

/* Reads one line from IN into *BUF (CAP its size; grown, at most
 * MCP_LINE_MAX + 1 bytes).  A line that cannot be kept is still consumed up
 * to its newline, so the next read starts at the next message. */
enum mcp_read mcp_read_line(FILE *in, char **buf, size_t *cap, size_t *len);

/* The reply (malloc'd, one line, no newline) for a line mcp_read_line could
 * not keep (RESULT MCP_READ_TOO_LONG or MCP_READ_NOMEM). */
char *mcp_unread_line_reply(enum mcp_read result);

#endif
