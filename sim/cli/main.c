/* The icsim command: hands argv to the CLI dispatcher in cli.c. */
#include "cli/cli.h"

int main(int argc, char **argv)
{
    return ics_cli_main(argc, argv);
}
