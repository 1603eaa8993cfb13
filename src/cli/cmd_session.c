/* The unary agenthub commands: session open/close, terminal open, emit,
 * show, list, whoami, skip-batch, send. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "grpc/grpc_wire.h"

#define SPAWN_PATH  "/compass.v1.ResourceService/SpawnResource"
#define CLOSE_PATH  "/compass.v1.ResourceService/CloseResource"
#define APPEND_PATH "/compass.v1.ResourceService/AppendResourceOutput"

/* Parses "@N", "#N" or "N" (N > 0).  Returns 0 with *ID set, or -1. */
static int parse_resource_id(const char *text, uint64_t *id)
{
    char *end;
    unsigned long long value;

    if (text[0] == '@' || text[0] == '#')
        text++;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno || *end || value == 0)
        return -1;
    *id = value;
    return 0;
}

/* Spawns (or, for an open (provider, native_id), finds) an agent session
 * under PARENT.  Returns the gRPC status. */
static int spawn_agent_session(struct cli_env *env, uint64_t parent, const char *provider,
                               const char *native_id, Compass__V1__SpawnResourceResponse **out,
                               struct grpc_client_result *result)
{
    Compass__V1__SpawnResourceRequest request = COMPASS__V1__SPAWN_RESOURCE_REQUEST__INIT;

    request.kind = COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_AGENT_SESSION;
    request.parent = parent;
    request.provider = (char *)provider;
    request.native_id = (char *)(native_id ? native_id : "");
    return cli_unary(env, SPAWN_PATH, &request.base,
                     &compass__v1__spawn_resource_response__descriptor, (ProtobufCMessage **)out,
                     result);
}

static const char session_open_usage[] =
    "usage: agenthub session open @TERMINAL --provider P [--native-id ID] [--json]\n"
    "Opens an agent session under terminal resource TERMINAL and prints its session id\n"
    "(--json: {\"session_id\",\"resource_id\"}).  An open session with the same\n"
    "(provider, native_id) is reused.\n";

static int session_open(struct cli_env *env, int argc, char **argv)
{
    const char *provider = NULL, *native_id = NULL, *pos[1];
    int json = 0, n_pos, rv;
    const struct cli_flag flags[] = {{"--provider", NULL, &provider},
                                     {"--native-id", NULL, &native_id},
                                     {"--json", &json, NULL},
                                     {NULL, NULL, NULL}};
    Compass__V1__SpawnResourceResponse *response = NULL;
    struct grpc_client_result result;
    uint64_t parent;

    rv = cli_parse(env, argc, argv, flags, pos, 1, &n_pos, session_open_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != 1 || !provider || parse_resource_id(pos[0], &parent) != 0) {
        fputs(session_open_usage, stderr);
        return CLI_EUSAGE;
    }
    if (cli_connect(env, 0) != 0)
        return CLI_ESERVER;
    if (spawn_agent_session(env, parent, provider, native_id, &response, &result) != GRPC_STATUS_OK)
        return cli_fail(env, &result);
    if (json)
        printf("{\"session_id\":\"%s\",\"resource_id\":%llu}\n", response->session_id,
               (unsigned long long)response->resource_id);
    else
        printf("%s\n", response->session_id);
    protobuf_c_message_free_unpacked(&response->base, NULL);
    return CLI_OK;
}

static const char session_close_usage[] =
    "usage: agenthub session close S\n"
    "Closes agent session S: #RESOURCE_ID, a session id or provider:native_id.\n"
    "The caller must be a producer of the session (its agent account, its Runner,\n"
    "or an admin).\n";

static int session_close(struct cli_env *env, int argc, char **argv)
{
    const char *pos[1];
    const struct cli_flag flags[] = {{NULL, NULL, NULL}};
    Compass__V1__CloseResourceRequest request = COMPASS__V1__CLOSE_RESOURCE_REQUEST__INIT;
    Compass__V1__CloseResourceResponse *response = NULL;
    struct grpc_client_result result;
    struct cli_target target;
    int n_pos, rv;

    rv = cli_parse(env, argc, argv, flags, pos, 1, &n_pos, session_close_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != 1) {
        fputs(session_close_usage, stderr);
        return CLI_EUSAGE;
    }
    if (pos[0][0] == '#') {
        if (parse_resource_id(pos[0], &request.resource_id) != 0) {
            fputs(session_close_usage, stderr);
            return CLI_EUSAGE;
        }
    } else if (cli_target_parse(pos[0], &target) != 0) {
        fputs(session_close_usage, stderr);
        return CLI_EUSAGE;
    } else if (target.session_id[0]) {
        request.session_id = target.session_id;
    } else {
        request.provider = target.provider;
        request.native_id = target.native_id;
    }
    if (cli_connect(env, 0) != 0)
        return CLI_ESERVER;
    if (cli_unary(env, CLOSE_PATH, &request.base, &compass__v1__close_resource_response__descriptor,
                  (ProtobufCMessage **)&response, &result) != GRPC_STATUS_OK)
        return cli_fail(env, &result);
    protobuf_c_message_free_unpacked(&response->base, NULL);
    return CLI_OK;
}

static const char terminal_usage[] =
    "usage: agenthub terminal open CONTAINER [--runner]\n"
    "Registers a terminal resource in CONTAINER and prints its resource id (the\n"
    "Runner hosting the container or an admin may).  --runner calls the Runner door.\n";

static int terminal_open(struct cli_env *env, int argc, char **argv)
{
    const char *pos[1];
    int runner = 0, n_pos, rv;
    const struct cli_flag flags[] = {{"--runner", &runner, NULL}, {NULL, NULL, NULL}};
    Compass__V1__SpawnResourceRequest request = COMPASS__V1__SPAWN_RESOURCE_REQUEST__INIT;
    Compass__V1__SpawnResourceResponse *response = NULL;
    struct grpc_client_result result;

    rv = cli_parse(env, argc, argv, flags, pos, 1, &n_pos, terminal_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != 1) {
        fputs(terminal_usage, stderr);
        return CLI_EUSAGE;
    }
    if (cli_connect(env, runner) != 0)
        return CLI_ESERVER;
    request.kind = COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_TERMINAL;
    request.container_name = (char *)pos[0];
    if (cli_unary(env, SPAWN_PATH, &request.base, &compass__v1__spawn_resource_response__descriptor,
                  (ProtobufCMessage **)&response, &result) != GRPC_STATUS_OK)
        return cli_fail(env, &result);
    printf("%llu\n", (unsigned long long)response->resource_id);
    protobuf_c_message_free_unpacked(&response->base, NULL);
    return CLI_OK;
}

int cli_session_main(int argc, char **argv)
{
    struct cli_env env;
    int rv;

    cli_env_init(&env);
    if (argc >= 2 && strcmp(argv[1], "open") == 0)
        rv = session_open(&env, argc - 1, argv + 1);
    else if (argc >= 2 && strcmp(argv[1], "close") == 0)
        rv = session_close(&env, argc - 1, argv + 1);
    else if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(session_open_usage, stdout);
        fputs(session_close_usage, stdout);
        fputs(cli_common_help, stdout);
        rv = CLI_OK;
    } else {
        fputs(session_open_usage, stderr);
        fputs(session_close_usage, stderr);
        rv = CLI_EUSAGE;
    }
    cli_env_free(&env);
    return rv;
}

int cli_terminal_main(int argc, char **argv)
{
    struct cli_env env;
    int rv;

    cli_env_init(&env);
    if (argc >= 2 && strcmp(argv[1], "open") == 0) {
        rv = terminal_open(&env, argc - 1, argv + 1);
    } else if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(terminal_usage, stdout);
        fputs(cli_common_help, stdout);
        rv = CLI_OK;
    } else {
        fputs(terminal_usage, stderr);
        rv = CLI_EUSAGE;
    }
    cli_env_free(&env);
    return rv;
}

int cli_emit_record(struct cli_env *env, const struct cli_target *target, const char *type,
                    json_t *data, Compass__V1__AppendResourceOutputResponse **out,
                    struct grpc_client_result *result)
{
    Compass__V1__AppendResourceOutputRequest request =
        COMPASS__V1__APPEND_RESOURCE_OUTPUT_REQUEST__INIT;
    json_t *record = json_pack("{s:s, s:O}", "type", type, "data", data);
    char *line = record ? json_dumps(record, JSON_COMPACT) : NULL;
    size_t len;
    char *body;
    int rv;

    json_decref(record);
    if (!line) {
        memset(result, 0, sizeof(*result));
        result->status = GRPC_STATUS_INVALID_ARGUMENT;
        snprintf(result->message, sizeof(result->message), "cannot encode the record");
        return result->status;
    }
    len = strlen(line);
    body = malloc(len + 2);
    if (!body) {
        free(line);
        memset(result, 0, sizeof(*result));
        result->status = GRPC_STATUS_RESOURCE_EXHAUSTED;
        snprintf(result->message, sizeof(result->message), "out of memory");
        return result->status;
    }
    memcpy(body, line, len);
    body[len] = '\n';
    body[len + 1] = '\0';
    free(line);
    request.bytes.data = (uint8_t *)body;
    request.bytes.len = len + 1;
    request.session_id = (char *)target->session_id;
    request.provider = (char *)target->provider;
    request.native_id = (char *)target->native_id;
    rv = cli_unary(env, APPEND_PATH, &request.base,
                   &compass__v1__append_resource_output_response__descriptor,
                   (ProtobufCMessage **)out, result);
    free(body);
    return rv;
}

static const char emit_usage[] =
    "usage: agenthub emit S --type T [--data JSON|-]\n"
    "Appends one AgentEventsJsonlV1 record of type T (session_start, prompt,\n"
    "tool_start, tool_end, notification, ask, stop, session_end, state,\n"
    "provider_raw) to session S (a session id or provider:native_id); data is a JSON\n"
    "object (- reads it from stdin).  Prints the record's seq.\n";

int cli_emit_main(int argc, char **argv)
{
    const char *type = NULL, *data_text = NULL, *pos[1];
    const struct cli_flag flags[] = {
        {"--type", NULL, &type}, {"--data", NULL, &data_text}, {NULL, NULL, NULL}};
    Compass__V1__AppendResourceOutputResponse *response = NULL;
    struct grpc_client_result result;
    struct cli_target target;
    struct cli_env env;
    json_t *data = NULL;
    json_error_t error;
    char *stdin_text = NULL;
    int n_pos, rv;

    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, flags, pos, 1, &n_pos, emit_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != 1 || !type || cli_target_parse(pos[0], &target) != 0) {
        fputs(emit_usage, stderr);
        return CLI_EUSAGE;
    }
    if (data_text && strcmp(data_text, "-") == 0) {
        stdin_text = cli_read_stdin(1 << 20, NULL);
        if (!stdin_text) {
            fprintf(stderr, "agenthub: cannot read --data from stdin\n");
            return CLI_EUSAGE;
        }
        data_text = stdin_text;
    }
    data = data_text ? json_loads(data_text, JSON_REJECT_DUPLICATES, &error) : json_object();
    free(stdin_text);
    if (!data || !json_is_object(data)) {
        fprintf(stderr, "agenthub: --data must be a JSON object%s%s\n", data ? "" : ": ",
                data ? "" : error.text);
        json_decref(data);
        return CLI_EUSAGE;
    }
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) == 0) {
        if (cli_emit_record(&env, &target, type, data, &response, &result) == GRPC_STATUS_OK) {
            printf("%llu\n", (unsigned long long)response->last_seq);
            protobuf_c_message_free_unpacked(&response->base, NULL);
            rv = CLI_OK;
        } else {
            rv = cli_fail(&env, &result);
        }
    }
    json_decref(data);
    cli_env_free(&env);
    return rv;
}

static json_t *status_json(const Compass__V1__AgentSessionStatus *s)
{
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:I}", "session_id", s->session_id, "state",
                     cli_state_name(s->state), "ended", cli_state_ended(s->state),
                     "agent_account_id", s->agent_account_id, "provider", s->provider, "native_id",
                     s->native_id, "last_seq", (json_int_t)s->last_seq);
}

static void print_status(const Compass__V1__AgentSessionStatus *s, int json, int table)
{
    if (json) {
        json_t *o = status_json(s);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(o);
    } else if (table) {
        printf("%-24s %-12s %-6s %-16s %-10s %-24s %llu\n", s->session_id, cli_state_name(s->state),
               cli_state_ended(s->state) ? "ended" : "live",
               s->agent_account_id[0] ? s->agent_account_id : "-",
               s->provider[0] ? s->provider : "-", s->native_id[0] ? s->native_id : "-",
               (unsigned long long)s->last_seq);
    } else {
        printf("session    %s\nstate      %s%s\nagent      %s\nprovider   %s\nnative_id  %s\n"
               "last_seq   %llu\n",
               s->session_id, cli_state_name(s->state),
               cli_state_ended(s->state) ? " (ended: its log stays readable)" : "",
               s->agent_account_id, s->provider, s->native_id, (unsigned long long)s->last_seq);
    }
}

static const char show_usage[] =
    "usage: agenthub show S [--json]\n"
    "Prints session S's status (a session id or provider:native_id).\n";
static const char list_usage[] =
    "usage: agenthub list [--live | --ended] [--json]\n"
    "Lists every session the caller may see: id, state, whether it ended (its agent\n"
    "stopped or errored), agent, provider, native id, last seq (--json: one object\n"
    "per line).  --live lists only sessions that have not ended, --ended only those\n"
    "that have.\n";

int cli_show_main(int argc, char **argv)
{
    const char *pos[1];
    int json = 0, n_pos, rv;
    const struct cli_flag flags[] = {{"--json", &json, NULL}, {NULL, NULL, NULL}};
    Compass__V1__GetAgentStatusResponse *response = NULL;
    struct grpc_client_result result;
    struct cli_target target;
    struct cli_env env;

    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, flags, pos, 1, &n_pos, show_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != 1 || cli_target_parse(pos[0], &target) != 0) {
        fputs(show_usage, stderr);
        return CLI_EUSAGE;
    }
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) == 0) {
        if (cli_target_resolve(&env, &target, &result) != GRPC_STATUS_OK ||
            cli_session_status(&env, target.session_id, &response, &result) != GRPC_STATUS_OK) {
            rv = cli_fail(&env, &result);
        } else {
            print_status(response->statuses[0], json, 0);
            protobuf_c_message_free_unpacked(&response->base, NULL);
            rv = CLI_OK;
        }
    }
    cli_env_free(&env);
    return rv;
}

int cli_list_main(int argc, char **argv)
{
    const char *pos[1];
    int json = 0, live = 0, ended = 0, n_pos, rv;
    const struct cli_flag flags[] = {{"--json", &json, NULL},
                                     {"--live", &live, NULL},
                                     {"--ended", &ended, NULL},
                                     {NULL, NULL, NULL}};
    Compass__V1__GetAgentStatusRequest request = COMPASS__V1__GET_AGENT_STATUS_REQUEST__INIT;
    Compass__V1__GetAgentStatusResponse *response = NULL;
    struct grpc_client_result result;
    struct cli_env env;

    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, flags, pos, 0, &n_pos, list_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (live && ended) {
        fputs(list_usage, stderr);
        return CLI_EUSAGE;
    }
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) == 0) {
        if (cli_unary(&env, "/compass.v1.CompassService/GetAgentStatus", &request.base,
                      &compass__v1__get_agent_status_response__descriptor,
                      (ProtobufCMessage **)&response, &result) != GRPC_STATUS_OK) {
            rv = cli_fail(&env, &result);
        } else {
            if (!json)
                printf("%-24s %-12s %-6s %-16s %-10s %-24s %s\n", "SESSION", "STATE", "ENDED",
                       "AGENT", "PROVIDER", "NATIVE_ID", "LAST_SEQ");
            for (size_t i = 0; i < response->n_statuses; i++) {
                int is_ended = cli_state_ended(response->statuses[i]->state);
                if ((live && is_ended) || (ended && !is_ended))
                    continue;
                print_status(response->statuses[i], json, 1);
            }
            protobuf_c_message_free_unpacked(&response->base, NULL);
            rv = CLI_OK;
        }
    }
    cli_env_free(&env);
    return rv;
}

static const char whoami_usage[] = "usage: agenthub whoami\n"
                                   "Prints the account the token authenticates.\n";

int cli_whoami_main(int argc, char **argv)
{
    const char *pos[1];
    int n_pos, rv;
    Compass__V1__WhoAmIRequest request = COMPASS__V1__WHO_AM_IREQUEST__INIT;
    Compass__V1__WhoAmIResponse *response = NULL;
    struct grpc_client_result result;
    struct cli_env env;

    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, NULL, pos, 0, &n_pos, whoami_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) == 0) {
        if (cli_unary(&env, "/compass.v1.CompassService/WhoAmI", &request.base,
                      &compass__v1__who_am_iresponse__descriptor, (ProtobufCMessage **)&response,
                      &result) != GRPC_STATUS_OK) {
            rv = cli_fail(&env, &result);
        } else {
            printf("%s\n", response->account_id);
            protobuf_c_message_free_unpacked(&response->base, NULL);
            rv = CLI_OK;
        }
    }
    cli_env_free(&env);
    return rv;
}

static const char skip_usage[] = "usage: agenthub skip-batch S\n"
                                 "Fires session S's inbound batch window now (owner or admin).\n";
static const char send_usage[] =
    "usage: agenthub send S TEXT\n"
    "Sends TEXT to session S's agent through its Runner (owner or admin).\n";

/* skip-batch and send: one call on a resolved target. */
static int control_main(int argc, char **argv, int is_send)
{
    const char *pos[2];
    int n_pos, rv;
    struct grpc_client_result result;
    struct cli_target target;
    struct cli_env env;
    ProtobufCMessage *response = NULL;

    cli_env_init(&env);
    rv = cli_parse(&env, argc, argv, NULL, pos, is_send ? 2 : 1, &n_pos,
                   is_send ? send_usage : skip_usage);
    if (rv != 0)
        return rv > 0 ? CLI_OK : CLI_EUSAGE;
    if (n_pos != (is_send ? 2 : 1) || cli_target_parse(pos[0], &target) != 0) {
        fputs(is_send ? send_usage : skip_usage, stderr);
        return CLI_EUSAGE;
    }
    rv = CLI_ESERVER;
    if (cli_connect(&env, 0) != 0) {
        /* cli_connect said why */
    } else if (cli_target_resolve(&env, &target, &result) != GRPC_STATUS_OK) {
        rv = cli_fail(&env, &result);
    } else {
        if (is_send) {
            Compass__V1__SendAgentMessageRequest request =
                COMPASS__V1__SEND_AGENT_MESSAGE_REQUEST__INIT;
            request.session_id = target.session_id;
            request.text = (char *)pos[1];
            rv = cli_unary(&env, "/compass.v1.CompassService/SendAgentMessage", &request.base,
                           &compass__v1__send_agent_message_response__descriptor, &response,
                           &result);
        } else {
            Compass__V1__SkipBatchWindowRequest request =
                COMPASS__V1__SKIP_BATCH_WINDOW_REQUEST__INIT;
            request.session_id = target.session_id;
            rv =
                cli_unary(&env, "/compass.v1.CompassService/SkipBatchWindow", &request.base,
                          &compass__v1__skip_batch_window_response__descriptor, &response, &result);
        }
        rv = rv == GRPC_STATUS_OK ? CLI_OK : cli_fail(&env, &result);
        if (response)
            protobuf_c_message_free_unpacked(response, NULL);
    }
    cli_env_free(&env);
    return rv;
}

int cli_skip_batch_main(int argc, char **argv)
{
    return control_main(argc, argv, 0);
}

int cli_send_main(int argc, char **argv)
{
    return control_main(argc, argv, 1);
}
