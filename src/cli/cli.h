/* cli: entry points of the agenthub subcommands.  Each returns the process
 * exit status: 0 success, 1 a server or store error, 2 usage. */
#ifndef AGENTHUB_CLI_H
#define AGENTHUB_CLI_H

/* argv[0] is the subcommand name ("admin"). */
int cli_admin_main(int argc, char **argv);

int cli_session_main(int argc, char **argv);
int cli_terminal_main(int argc, char **argv);
int cli_emit_main(int argc, char **argv);
int cli_log_main(int argc, char **argv);
int cli_show_main(int argc, char **argv);
int cli_list_main(int argc, char **argv);
int cli_events_main(int argc, char **argv);
int cli_skip_batch_main(int argc, char **argv);
int cli_send_main(int argc, char **argv);
int cli_whoami_main(int argc, char **argv);
int cli_hook_main(int argc, char **argv);
int cli_mcp_main(int argc, char **argv);

#endif
