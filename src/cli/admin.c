/* agenthub admin: placeholder until the store lands. */
#include <stdio.h>

#include "cli/cli.h"

int cli_admin_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("agenthub admin: the store is not built yet\n", stderr);
    return 2;
}
