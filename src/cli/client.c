/* client: connection settings, bounded unary calls, errors and session
 * targets for the agenthub client commands (see client.h). */
#include "cli/client.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/hostport.h"
#include "grpc/grpc_wire.h"

const char cli_common_help[] =
    "common flags:\n"
    "  --addr HOST:PORT         public door (env AGENTHUB_ADDR, default " CLI_DEFAULT_ADDR ");\n"
    "                           a comma-separated list names a cluster's nodes\n"
    "  --runner-addr HOST:PORT  Runner door (env AGENTHUB_RUNNER_ADDR)\n"
    "  --token TOKEN            bearer token (env AGENTHUB_TOKEN)\n"
    "  --tls                    TLS with ALPN h2 (env AGENTHUB_TLS=1)\n"
    "  --ca FILE                verify the server against FILE (env AGENTHUB_CA)\n"
    "exit status: 0 ok, 1 server error, 2 usage\n";

static const char *env_or(const char *name, const char *fallback)
{
    const char *value = getenv(name);

    return value && value[0] ? value : fallback;
}

void cli_env_init(struct cli_env *env)
{
    memset(env, 0, sizeof(*env));
    env->addr = env_or("AGENTHUB_ADDR", CLI_DEFAULT_ADDR);
    env->runner_addr = env_or("AGENTHUB_RUNNER_ADDR", NULL);
    env->token = env_or("AGENTHUB_TOKEN", NULL);
    env->ca = env_or("AGENTHUB_CA", NULL);
    env->tls = strcmp(env_or("AGENTHUB_TLS", "0"), "1") == 0;
}

int cli_common_flag(struct cli_env *env, int argc, char **argv, int *i)
{
    static const struct {
        const char *flag;
        size_t offset;
    } value_flags[] = {
        {"--addr", offsetof(struct cli_env, addr)},
        {"--runner-addr", offsetof(struct cli_env, runner_addr)},
        {"--token", offsetof(struct cli_env, token)},
        {"--ca", offsetof(struct cli_env, ca)},
    };
    const char *arg = argv[*i];

    if (strcmp(arg, "--tls") == 0) {
        env->tls = 1;
        return 1;
    }
    for (size_t k = 0; k < sizeof(value_flags) / sizeof(value_flags[0]); k++) {
        size_t n = strlen(value_flags[k].flag);
        const char **slot = (const char **)((char *)env + value_flags[k].offset);
        if (strcmp(arg, value_flags[k].flag) == 0) {
            if (*i + 1 >= argc) {
                fprintf(stderr, "agenthub: %s needs a value\n", arg);
                return -1;
            }
            *slot = argv[++*i];
            return 1;
        }
        if (strncmp(arg, value_flags[k].flag, n) == 0 && arg[n] == '=') {
            *slot = arg + n + 1;
            return 1;
        }
    }
    return 0;
}

int cli_parse(struct cli_env *env, int argc, char **argv, const struct cli_flag *flags,
              const char **pos, int max_pos, int *n_pos, const char *usage)
{
    int only_pos = 0;

    *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int rv, matched = 0;
        if (!only_pos && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            fputs(usage, stdout);
            fputs(cli_common_help, stdout);
            return 1;
        }
        if (!only_pos && strcmp(arg, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (!only_pos && arg[0] == '-' && arg[1] != '\0') {
            rv = cli_common_flag(env, argc, argv, &i);
            if (rv < 0)
                goto usage;
            if (rv > 0)
                continue;
            for (const struct cli_flag *f = flags; f && f->name; f++) {
                size_t n = strlen(f->name);
                if (strcmp(arg, f->name) == 0) {
                    if (f->value) {
                        if (i + 1 >= argc) {
                            fprintf(stderr, "agenthub: %s needs a value\n", arg);
                            goto usage;
                        }
                        *f->value = argv[++i];
                    } else {
                        *f->flag = 1;
                    }
                    matched = 1;
                    break;
                }
                if (f->value && strncmp(arg, f->name, n) == 0 && arg[n] == '=') {
                    *f->value = arg + n + 1;
                    matched = 1;
                    break;
                }
            }
            if (!matched) {
                fprintf(stderr, "agenthub: unknown flag '%s'\n", arg);
                goto usage;
            }
            continue;
        }
        if (*n_pos >= max_pos) {
            fprintf(stderr, "agenthub: unexpected argument '%s'\n", arg);
            goto usage;
        }
        pos[(*n_pos)++] = arg;
    }
    return 0;
usage:
    fputs(usage, stderr);
    return -1;
}

uint64_t cli_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int cli_connect(struct cli_env *env, int runner)
{
    struct grpc_client_options options;
    const char *addr = runner ? env->runner_addr : env->addr;
    char err[256];

    if (addr && hostport_list_nth(addr, env->addr_index, env->addr_buf, sizeof(env->addr_buf)))
        addr = env->addr_buf;

    if (env->client && !grpc_client_broken(env->client) && env->runner_door == runner)
        return 0;
    if (env->client) {
        grpc_client_free(env->client);
        env->client = NULL;
    }
    if (!addr) {
        if (!env->quiet)
            fprintf(stderr, "agenthub: UNAVAILABLE: no Runner door address "
                            "(set AGENTHUB_RUNNER_ADDR or --runner-addr)\n");
        return -1;
    }
    if (!env->base) {
        env->base = event_base_new();
        if (!env->base) {
            if (!env->quiet)
                fprintf(stderr, "agenthub: INTERNAL: cannot create the event loop\n");
            return -1;
        }
    }
    memset(&options, 0, sizeof(options));
    options.tls = env->tls;
    options.ca_file = env->ca;
    env->client = grpc_client_new(env->base, addr, &options, err, sizeof(err));
    if (!env->client) {
        if (!env->quiet)
            fprintf(stderr, "agenthub: UNAVAILABLE: %s\n", err);
        return -1;
    }
    env->runner_door = runner;
    return 0;
}

void cli_next_address(struct cli_env *env)
{
    if (env->client)
        grpc_client_free(env->client);
    env->client = NULL;
    env->addr_index++;
}

void cli_env_free(struct cli_env *env)
{
    if (env->client)
        grpc_client_free(env->client);
    env->client = NULL;
    if (env->base)
        event_base_free(env->base);
    env->base = NULL;
}

static void result_set(struct grpc_client_result *result, int status, const char *message)
{
    memset(result, 0, sizeof(*result));
    result->status = status;
    snprintf(result->message, sizeof(result->message), "%s", message);
}

int cli_unary(struct cli_env *env, const char *path, const ProtobufCMessage *request,
              const ProtobufCMessageDescriptor *response_type, ProtobufCMessage **response,
              struct grpc_client_result *result)
{
    struct grpc_client_result local;
    uint32_t timeout_ms = 0;

    if (!result)
        result = &local;
    *response = NULL;
    if (!env->client) {
        result_set(result, GRPC_STATUS_UNAVAILABLE, "not connected");
        return result->status;
    }
    /* Every call of a command shares the command's deadline (the hook's
     * 2 s bound); the client enforces it locally even against a hung peer. */
    if (env->deadline_ms) {
        uint64_t now = cli_now_ms();
        if (now >= env->deadline_ms) {
            result_set(result, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded");
            return result->status;
        }
        timeout_ms = (uint32_t)(env->deadline_ms - now);
    }
    return grpc_client_unary(env->client, path, env->token, timeout_ms, request, response_type,
                             response, result);
}

int cli_fail(const struct cli_env *env, const struct grpc_client_result *result)
{
    if (!env->quiet)
        fprintf(stderr, "agenthub: %s: %s\n", grpc_status_name(result->status),
                result->message[0] ? result->message : "(no message)");
    return CLI_ESERVER;
}

int cli_target_parse(const char *text, struct cli_target *target)
{
    const char *colon = strchr(text, ':');

    memset(target, 0, sizeof(*target));
    if (!text[0])
        return -1;
    if (colon) {
        size_t n = (size_t)(colon - text);
        if (n == 0 || !colon[1] || n >= sizeof(target->provider) ||
            strlen(colon + 1) >= sizeof(target->native_id))
            return -1;
        memcpy(target->provider, text, n);
        snprintf(target->native_id, sizeof(target->native_id), "%s", colon + 1);
        return 0;
    }
    if (strlen(text) >= sizeof(target->session_id))
        return -1;
    snprintf(target->session_id, sizeof(target->session_id), "%s", text);
    return 0;
}

int cli_target_resolve(struct cli_env *env, struct cli_target *target,
                       struct grpc_client_result *result)
{
    Compass__V1__GetAgentStatusRequest request = COMPASS__V1__GET_AGENT_STATUS_REQUEST__INIT;
    Compass__V1__GetAgentStatusResponse *response = NULL;
    int rv;

    if (target->session_id[0])
        return GRPC_STATUS_OK;
    rv = cli_unary(env, "/compass.v1.CompassService/GetAgentStatus", &request.base,
                   &compass__v1__get_agent_status_response__descriptor,
                   (ProtobufCMessage **)&response, result);
    if (rv != GRPC_STATUS_OK)
        return rv;
    /* grpc_client_unary returns OK only with a parsed response. */
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
    for (size_t i = 0; i < response->n_statuses; i++) {
        const Compass__V1__AgentSessionStatus *s = response->statuses[i];
        if (strcmp(s->provider, target->provider) == 0 &&
            strcmp(s->native_id, target->native_id) == 0) {
            snprintf(target->session_id, sizeof(target->session_id), "%s", s->session_id);
            break;
        }
    }
    protobuf_c_message_free_unpacked(&response->base, NULL);
    if (target->session_id[0])
        return GRPC_STATUS_OK;
    result_set(result, GRPC_STATUS_NOT_FOUND, "no visible session has that provider:native_id");
    return GRPC_STATUS_NOT_FOUND;
}

int cli_session_status(struct cli_env *env, const char *session_id,
                       Compass__V1__GetAgentStatusResponse **out, struct grpc_client_result *result)
{
    Compass__V1__GetAgentStatusRequest request = COMPASS__V1__GET_AGENT_STATUS_REQUEST__INIT;
    int rv;

    request.session_id = (char *)session_id;
    rv = cli_unary(env, "/compass.v1.CompassService/GetAgentStatus", &request.base,
                   &compass__v1__get_agent_status_response__descriptor, (ProtobufCMessage **)out,
                   result);
    if (rv == GRPC_STATUS_OK && (!*out || (*out)->n_statuses == 0)) {
        if (*out)
            protobuf_c_message_free_unpacked(&(*out)->base, NULL);
        *out = NULL;
        result_set(result, GRPC_STATUS_NOT_FOUND, "session not found");
        return GRPC_STATUS_NOT_FOUND;
    }
    return rv;
}

const char *cli_state_name(int state)
{
    static const char *const names[] = {"unspecified", "starting", "ready",        "working",
                                        "stopped",     "errored",  "disconnected", "blocked",
                                        "done",        "idle"};

    if (state < 0 || (size_t)state >= sizeof(names) / sizeof(names[0]))
        return "unspecified";
    return names[state];
}

int cli_state_ended(int state)
{
    return state == COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED ||
           state == COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_ERRORED;
}

const char *cli_tool_status_name(int status)
{
    static const char *const names[] = {"unspecified", "pending", "in_progress", "completed",
                                        "failed"};

    if (status < 0 || (size_t)status >= sizeof(names) / sizeof(names[0]))
        return "unspecified";
    return names[status];
}

const char *cli_plan_status_name(int status)
{
    static const char *const names[] = {"unspecified", "pending", "in_progress", "completed"};

    if (status < 0 || (size_t)status >= sizeof(names) / sizeof(names[0]))
        return "unspecified";
    return names[status];
}

char *cli_read_stdin(size_t max, size_t *len)
{
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap + 1);

    if (!buf)
        return NULL;
    for (;;) {
        ssize_t n;
        if (used == cap) {
            char *bigger;
            if (cap >= max) {
                free(buf);
                return NULL;
            }
            cap *= 2;
            bigger = realloc(buf, cap + 1);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
        }
        n = read(STDIN_FILENO, buf + used, cap - used);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    if (used > max) {
        free(buf);
        return NULL;
    }
    buf[used] = '\0';
    if (len)
        *len = used;
    return buf;
}

void cli_format_time(int64_t ms, char *out, size_t out_size)
{
    time_t seconds = (time_t)(ms / 1000);
    struct tm tm;

    if (!localtime_r(&seconds, &tm)) {
        snprintf(out, out_size, "??:??:??.???");
        return;
    }
    snprintf(out, out_size, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ms % 1000));
}
