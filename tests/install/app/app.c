/*
 * app.c - the smallest configured application: opens the configured engine,
 * and prints its name.
 */
#include <stdio.h>

#include <tenferro/tenferro.h>

int main(void)
{
    tf_engine *engine;
    char *report;
    tf_status st = tf_engine_open_configured(&engine, &report);
    tf_config_report_free(report);
    if (st) {
        fprintf(stderr, "app: %s\n", tf_error_message());
        return 1;
    }
    printf("engine %s\n", tf_engine_name(engine));
    tf_engine_destroy(engine);
    return 0;
}
