/*
 * tenferro.c - the tenferro command: dispatches to its subcommands.
 */
#include <stdio.h>
#include <string.h>

#include <tenferro/tenferro.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tenferro <command> [options]\n"
               "\n"
               "commands:\n"
               "  info [--json]   version, plugin search path, every plugin found (or why it\n"
               "                  was refused) and each engine's devices\n"
               "  demo [--engine NAME] [--threads N] [--epochs N]\n"
               "                  train a small perceptron on two spirals and report its\n"
               "                  accuracy (the main job; default engine: cpu)\n"
               "  bench [--engine NAME] [--threads N] [--quick] [WORKLOAD ...]\n"
               "                  run the standard workloads (dispatch, mlp, elementwise,\n"
               "                  matmul; docs/performance.md) and print their figures\n"
               "  version         print the library version\n"
               "  help            this text\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0)
        return tf_cli_info(argc - 1, argv + 1);
    if (strcmp(cmd, "demo") == 0)
        return tf_cli_demo(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return tf_cli_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("tenferro %s (engine ABI %d.%d)\n", tf_version_string(), TF_ENGINE_ABI_MAJOR,
               TF_ENGINE_ABI_MINOR);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "tenferro: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
