/* agenthub-runner: the reference Runner (stub until the clients issue lands). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int help = argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    fputs("usage: agenthub-runner [--help]\n"
          "\n"
          "The reference Runner is not built yet: this binary is a stub until the\n"
          "clients issue lands.  It will enroll with agenthubd, keep the Sessions\n"
          "control stream and relay frames runner-sequenced.\n",
          help ? stdout : stderr);
    return help ? 0 : 2;
}
