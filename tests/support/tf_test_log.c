/*
 * tf_test_log.c - the log capture of tf_test_log.h.
 */
#include "tf_test_log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_LINES 256
#define LINE_CAP 256

typedef struct log_line {
    int level;
    char text[LINE_CAP];
} log_line;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static log_line g_lines[MAX_LINES];
static size_t g_count; /* lines kept, oldest first */

static void capture(void *user, tf_log_level level, const char *message)
{
    (void)user;
    pthread_mutex_lock(&g_lock);
    if (g_count == MAX_LINES) {
        memmove(g_lines, g_lines + 1, sizeof g_lines[0] * (MAX_LINES - 1));
        g_count--;
    }
    g_lines[g_count].level = (int)level;
    snprintf(g_lines[g_count].text, LINE_CAP, "%s", message ? message : "(null)");
    g_count++;
    pthread_mutex_unlock(&g_lock);
}

void tf_test_log_start(tf_log_level max_level)
{
    tf_test_log_clear();
    tf_log_set(capture, NULL, max_level);
}

void tf_test_log_stop(void)
{
    tf_log_set(NULL, NULL, TF_LOG_ERROR);
}

void tf_test_log_clear(void)
{
    pthread_mutex_lock(&g_lock);
    g_count = 0;
    pthread_mutex_unlock(&g_lock);
}

size_t tf_test_log_count(int level, const char *needle)
{
    size_t n = 0;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_count; i++)
        if ((level < 0 || g_lines[i].level == level) && strstr(g_lines[i].text, needle))
            n++;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void tf_test_log_dump(void)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_count; i++)
        fprintf(stderr, "  log[%d] %s\n", g_lines[i].level, g_lines[i].text);
    pthread_mutex_unlock(&g_lock);
}
