/* cli: entry points of the agenthub subcommands.  Each returns the process
 * exit status: 0 success, 1 a server or store error, 2 usage. */
#ifndef AGENTHUB_CLI_H
#define AGENTHUB_CLI_H

/* argv[0] is the subcommand name ("admin"). */
int cli_admin_main(int argc, char **argv);

#endif
