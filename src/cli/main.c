/* agenthub: the command line.  Subcommands dispatch to one file each. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} commands[] = {
    {"admin", cli_admin_main}, {"session", cli_session_main}, {"terminal", cli_terminal_main},
    {"emit", cli_emit_main},   {"log", cli_log_main},         {"show", cli_show_main},
    {"list", cli_list_main},   {"events", cli_events_main},   {"skip-batch", cli_skip_batch_main},
    {"send", cli_send_main},   {"whoami", cli_whoami_main},   {"hook", cli_hook_main},
    {"mcp", cli_mcp_main},
};

static void usage(FILE *out)
{
    fputs("usage: agenthub COMMAND [ARGS...]\n"
          "\n"
          "commands:\n"
          "  session open @TERMINAL --provider P [--native-id ID]   open an agent session\n"
          "  session close S                   close an agent session\n"
          "  terminal open CONTAINER           register a terminal (Runner or admin)\n"
          "  emit S --type T [--data JSON|-]   append a record to a session's log\n"
          "  log S [--follow] [--json] [--tail N]   a session's log\n"
          "  show S                            a session's status\n"
          "  list                              every session you may see\n"
          "  events [--since SEQ] [--json]     the event bus\n"
          "  skip-batch S                      fire a session's batch window now\n"
          "  send S TEXT                       send a message to a session's agent\n"
          "  whoami                            the account your token names\n"
          "  hook claude                       the Claude Code hook shim (stdin: hook JSON)\n"
          "  mcp                               an MCP server on stdio\n"
          "  admin --db PATH ...               provision accounts, channels, runners, ...\n"
          "\n"
          "S is a session id or provider:native_id.  Connection: AGENTHUB_ADDR,\n"
          "AGENTHUB_TOKEN (or --addr, --token, --tls, --ca).\n"
          "Run 'agenthub COMMAND --help' for a command's flags.\n"
          "Exit status: 0 ok, 1 server error, 2 usage.\n",
          out);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "agenthub: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
