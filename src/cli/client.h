/* client: the plumbing every agenthub client command shares.
 *
 * Connection settings come from the environment (AGENTHUB_ADDR,
 * AGENTHUB_RUNNER_ADDR, AGENTHUB_TOKEN) and the flags of the same names
 * (--addr, --runner-addr, --token, --tls, --ca), flags winning.  Exit status:
 * CLI_OK 0, CLI_ESERVER 1 (a server error, printed as
 * "agenthub: STATUS_NAME: message"), CLI_EUSAGE 2. */
#ifndef AGENTHUB_CLI_CLIENT_H
#define AGENTHUB_CLI_CLIENT_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stdint.h>

#include "compass/v1/services.pb-c.h"
#include "grpc/grpc_client.h"

#define CLI_OK      0
#define CLI_ESERVER 1
#define CLI_EUSAGE  2

#define CLI_DEFAULT_ADDR "127.0.0.1:50051"
#define CLI_ID_MAX       256

struct event_base;

struct cli_env {
    const char *addr;
    const char *runner_addr;
    const char *token;
    const char *ca;
    int tls;
    int quiet; /* no error lines on stderr (the hook) */
    /* Absolute deadline (monotonic ms) over every call; 0: none. */
    uint64_t deadline_ms;
    struct event_base *base;
    struct grpc_client *client;
    int runner_door; /* client is connected to runner_addr */
    /* Which address of a comma-separated list (a cluster's nodes) is used;
     * cli_next_address moves on. */
    size_t addr_index;
    char addr_buf[256];
};

/* Fills ENV from the environment. */
void cli_env_init(struct cli_env *env);

/* Consumes a common flag at argv[*i] (advancing *i past its value).
 * Returns 1 when consumed, 0 when argv[*i] is not a common flag, -1 when its
 * value is missing (a message went to stderr). */
int cli_common_flag(struct cli_env *env, int argc, char **argv, int *i);

/* A command's own flag: a switch (VALUE NULL, *FLAG set to 1) or a flag with
 * a value (*VALUE set). */
struct cli_flag {
    const char *name;
    int *flag;
    const char **value;
};

/* Parses ARGV (argv[0] is the command) into FLAGS, the common flags and at
 * most MAX_POS positional arguments (argv after "--" are positional).  Prints
 * USAGE on --help (returns 1) or on a usage error (returns -1); else returns
 * 0 with *N_POS set. */
int cli_parse(struct cli_env *env, int argc, char **argv, const struct cli_flag *flags,
              const char **pos, int max_pos, int *n_pos, const char *usage);

/* The help text of the common flags, for each command's usage. */
extern const char cli_common_help[];

/* Connects (once) to the public door, or to the Runner door when RUNNER is
 * set.  Returns 0, or -1 after printing why (as UNAVAILABLE). */
int cli_connect(struct cli_env *env, int runner);

/* Drops the connection; the next cli_connect uses the next address of a
 * list (the next node of a cluster). */
void cli_next_address(struct cli_env *env);

/* Closes the connection and the event loop. */
void cli_env_free(struct cli_env *env);

/* Monotonic milliseconds. */
uint64_t cli_now_ms(void);

/* One unary call, bounded by env->deadline_ms when set (the connection is
 * dropped when the deadline passes: DEADLINE_EXCEEDED).  Returns the gRPC
 * status; RESULT (may be NULL) gets the details. */
int cli_unary(struct cli_env *env, const char *path, const ProtobufCMessage *request,
              const ProtobufCMessageDescriptor *response_type, ProtobufCMessage **response,
              struct grpc_client_result *result);

/* Prints "agenthub: STATUS_NAME: message" on stderr (unless quiet) and
 * returns CLI_ESERVER. */
int cli_fail(const struct cli_env *env, const struct grpc_client_result *result);

/* A session target: a session id, or provider:native_id. */
struct cli_target {
    char session_id[CLI_ID_MAX];
    char provider[CLI_ID_MAX];
    char native_id[CLI_ID_MAX];
};

/* Splits TEXT into a target.  Returns 0, or -1 when it is empty. */
int cli_target_parse(const char *text, struct cli_target *target);

/* Resolves a provider:native_id target to its session id with the
 * GetAgentStatus listing (a no-op for a session id).  Returns the gRPC status
 * (NOT_FOUND when no visible session matches); RESULT gets the details. */
int cli_target_resolve(struct cli_env *env, struct cli_target *target,
                       struct grpc_client_result *result);

/* Fetches the status of one session.  Returns the gRPC status; on OK *OUT is
 * the response (free with protobuf_c_message_free_unpacked) holding one row. */
int cli_session_status(struct cli_env *env, const char *session_id,
                       Compass__V1__GetAgentStatusResponse **out,
                       struct grpc_client_result *result);

/* Appends one record {"type": TYPE, "data": DATA} to TARGET (by session id
 * or provider:native_id).  Returns the gRPC status; on OK *OUT is the reply
 * (free with protobuf_c_message_free_unpacked). */
int cli_emit_record(struct cli_env *env, const struct cli_target *target, const char *type,
                    json_t *data, Compass__V1__AppendResourceOutputResponse **out,
                    struct grpc_client_result *result);

/* "working", "blocked", ...; "unspecified" for unknown values. */
/* 1 when STATE is one a session ends in (stopped or errored): its agent is
 * gone and its log will not grow. */
int cli_state_ended(int state);
const char *cli_state_name(int state);
const char *cli_tool_status_name(int status);
const char *cli_plan_status_name(int status);

/* Reads all of stdin into a NUL-terminated heap buffer.  Returns it, or NULL
 * on a read error or over MAX bytes. */
char *cli_read_stdin(size_t max, size_t *len);

/* Formats the local time of MS since the epoch as HH:MM:SS.mmm into OUT. */
void cli_format_time(int64_t ms, char *out, size_t out_size);

#endif
