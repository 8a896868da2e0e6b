/*
 * tenferro.c - the tenferro command: dispatches to its subcommands.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/tenferro.h>

#include "cli.h"

int tf_cli_parse_int(const char *text, long lo, long hi, int *out)
{
    if (!text || !*text || lo < INT_MIN || hi > INT_MAX)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

tf_status tf_cli_open_engine(const char *name, int threads, tf_engine **out)
{
    if (name)
        return tf_engine_open(name, threads, out);
    tf_config *config;
    tf_status st = tf_config_load(&config);
    if (st)
        return st;
    tf_config_set_threads(config, threads);
    char *report = NULL;
    st = tf_config_open_engine(config, out, &report);
    tf_config_destroy(config);
    const char *r = report ? report : "";
    while (!st && strncmp(r, "skipped ", 8) == 0) { /* the failure's message lists them */
        const char *nl = strchr(r, '\n');
        int n = nl ? (int)(nl - r) : (int)strlen(r);
        fprintf(stderr, "tenferro: %.*s\n", n, r);
        r += n + (nl ? 1 : 0);
    }
    tf_config_report_free(report);
    return st;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tenferro <command> [options]\n"
               "\n"
               "commands:\n"
               "  info [--json]   version, plugin search path, every plugin found (or why it\n"
               "                  was refused) and each engine's devices\n"
               "  demo [--engine NAME] [--threads N] [--epochs N] [--save FILE]\n"
               "       [--resume FILE]\n"
               "                  train a small perceptron on two spirals and report its\n"
               "                  accuracy (the main job; default: the configured engine,\n"
               "                  docs/apps.md); checkpoints in safetensors; under mpirun,\n"
               "                  data parallel (docs/training.md)\n"
               "  bench [--engine NAME] [--threads N] [--quick] [WORKLOAD ...]\n"
               "                  run the standard workloads (dispatch, mlp, elementwise,\n"
               "                  matmul, transformer, svd_grad; docs/performance.md) or\n"
               "                  those named, and print their figures (default: the\n"
               "                  configured engine); `tenferro bench --list` lists them\n"
               "  check-engine [options] PLUGIN\n"
               "                  the conformance kit: check an engine plugin against the\n"
               "                  CPU reference (primitives, gradients, lifecycle, ABI;\n"
               "                  `tenferro check-engine --help`, docs/cli.md)\n"
               "  einsum-path EXPR SHAPES [--optimize M] [--json]\n"
               "                  the contraction path tenferro.einsum chooses, with each\n"
               "                  step's cost (`tenferro einsum-path --help`, docs/einsum.md)\n"
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
    if (strcmp(cmd, "check-engine") == 0)
        return tf_cli_check_engine(argc - 1, argv + 1);
    if (strcmp(cmd, "einsum-path") == 0)
        return tf_cli_einsum_path(argc - 1, argv + 1);
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
