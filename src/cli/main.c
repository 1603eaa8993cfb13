/* agenthub: the command line.  Subcommands dispatch to one file each. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *out)
{
    fputs("usage: agenthub COMMAND [ARGS...]\n"
          "\n"
          "commands:\n"
          "  admin --db PATH ...   provision accounts, channels, runners, containers, sessions\n"
          "\n"
          "Not yet built (tracked by the clients issue): session, emit, log, show, list,\n"
          "events, skip-batch, send, whoami, hook claude, mcp.\n"
          "\n"
          "Run 'agenthub COMMAND --help' for a command's flags.\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "admin") == 0)
        return cli_admin_main(argc - 1, argv + 1);
    fprintf(stderr, "agenthub: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
