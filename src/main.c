/* agenthubd: placeholder until the server foundation lands. */
#include <stdio.h>

int main(void)
{
    fputs("agenthubd: not built yet\n", stderr);
    return 2;
}
