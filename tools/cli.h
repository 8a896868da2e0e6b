/* cli.h - the subcommands of the tenferro command and their shared helpers. */
#ifndef TF_CLI_H
#define TF_CLI_H

#include <stdio.h>

int tf_cli_info(int argc, char **argv);
int tf_cli_demo(int argc, char **argv);
int tf_cli_bench(int argc, char **argv);

/* Writes s as a JSON string literal (with quotes) to f. */
void tf_cli_json_string(FILE *f, const char *s);

#endif /* TF_CLI_H */
