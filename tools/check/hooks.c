/*
 * hooks.c - the kit's allocator and log hooks (system.h).
 *
 * Every host allocation of the library and of every plugin goes through the
 * allocator hook, so counting live bytes there shows whether an engine
 * instance gives back what it took when it is destroyed. The log hook
 * collects what engines report at TF_LOG_ERROR (e.g. the Vulkan engine's
 * validation-layer messages): an engine that logs errors during the checks
 * fails them. A crash or hang of the engine under test names the check the
 * kit was running (ck_doing) before the process dies.
 */
#define _POSIX_C_SOURCE 200809L /* sigaction, write */

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static atomic_llong g_live_bytes;
static atomic_int g_log_errors;
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_first_error[512];

/* Each block starts `align` bytes before the pointer returned; the header
   (size, align) sits in the 16 bytes just below it. */
static void *count_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    if (align < 16)
        align = 16;
    if (size > SIZE_MAX - 2 * align)
        return NULL;
    size_t total = (size + align + align - 1) / align * align;
    unsigned char *raw = aligned_alloc(align, total);
    if (!raw)
        return NULL;
    unsigned char *p = raw + align;
    size_t hdr[2] = {size, align};
    memcpy(p - sizeof hdr, hdr, sizeof hdr);
    atomic_fetch_add(&g_live_bytes, (long long)size);
    return p;
}

static void count_free(void *user, void *ptr)
{
    (void)user;
    if (!ptr)
        return;
    unsigned char *p = ptr;
    size_t hdr[2];
    memcpy(hdr, p - sizeof hdr, sizeof hdr);
    atomic_fetch_sub(&g_live_bytes, (long long)hdr[0]);
    free(p - hdr[1]);
}

static void on_log(void *user, tf_log_level level, const char *message)
{
    (void)user;
    if (level != TF_LOG_ERROR)
        return;
    if (atomic_fetch_add(&g_log_errors, 1) == 0) {
        pthread_mutex_lock(&g_log_lock);
        snprintf(g_first_error, sizeof g_first_error, "%s", message);
        pthread_mutex_unlock(&g_log_lock);
    }
}

void ck_hooks_install(void)
{
    tf_allocator a = {count_alloc, count_free, NULL};
    tf_allocator_set(&a);
    tf_log_set(on_log, NULL, TF_LOG_ERROR);
}

long long ck_live_bytes(void)
{
    return atomic_load(&g_live_bytes);
}

int ck_logged_errors(char *first, size_t cap)
{
    int n = atomic_load(&g_log_errors);
    pthread_mutex_lock(&g_log_lock);
    snprintf(first, cap, "%s", g_first_error);
    pthread_mutex_unlock(&g_log_lock);
    return n;
}

/* ---- what the kit is doing, for a crash or a hang ---- */

static char g_doing[768] = "starting";

void ck_doing(const char *fmt, ...)
{
    char buf[sizeof g_doing];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* The handlers read it asynchronously: copy whole so it is always terminated. */
    memcpy(g_doing, buf, sizeof buf);
}

static void say(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void on_fatal(int sig)
{
    /* async-signal-safe only: write(2), then die of the same signal */
    say("\ntenferro check-engine: ");
    if (sig == SIGALRM) {
        say("timed out (--timeout) while: ");
        say(g_doing);
        say("\n");
        _exit(1);
    }
    say(sig == SIGSEGV  ? "the engine crashed (SIGSEGV)"
        : sig == SIGBUS ? "the engine crashed (SIGBUS)"
        : sig == SIGFPE ? "the engine crashed (SIGFPE)"
        : sig == SIGILL ? "the engine crashed (SIGILL)"
                        : "the engine aborted (SIGABRT)");
    say(" while: ");
    say(g_doing);
    say("\n");
    signal(sig, SIG_DFL);
    raise(sig);
}

void ck_guard_install(unsigned timeout_s)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    if (timeout_s) {
        sigaction(SIGALRM, &sa, NULL);
        alarm(timeout_s);
    }
}
