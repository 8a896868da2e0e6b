/*
 * hooks.c - the kit's allocator and log hooks (system.h).
 *
 * Every host allocation of the library and of every plugin goes through the
 * allocator hook, so counting live bytes there shows whether an engine
 * instance gives back what it took when it is destroyed. Each block also
 * carries guard bytes just before and just after it, and the live blocks
 * are listed, so that after every check the kit can tell whether something
 * (an engine writing past its output, a wrong element size) overwrote memory
 * next to a block: the check that did it fails there and then, instead of a
 * later one crashing on the damage (ck_heap_check). The log hook collects
 * what engines report at TF_LOG_ERROR (e.g. the Vulkan engine's
 * validation-layer messages): an engine that logs errors during the checks
 * fails them. A crash or hang of the kit's own process names the check it
 * was running (ck_doing); checks in worker processes report it to the
 * parent instead (isolate.c).
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

/* ---- the guarded, counting allocator ---- */

#define GUARD_BYTES 16
#define GUARD_FILL 0xA5
#define HEAD_MAGIC 0x7466636b6865616bull /* "tfckheak" */

/* Just below each block (`prefix` bytes after the start of its allocation,
   a multiple of its alignment): the list links, its size, then the head
   guard, which ends where the block begins. */
typedef struct block {
    struct block *prev, *next;
    size_t size, prefix;
    uint64_t magic;
    unsigned char head[GUARD_BYTES];
} block;

static pthread_mutex_t g_blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static block *g_blocks; /* the live blocks, newest first */
/* Damage found when a block was freed, reported by the next ck_heap_check. */
static int g_freed_damaged;
static char g_freed_what[256];

static unsigned char *payload(block *b)
{
    return (unsigned char *)(b + 1);
}

/* Whether a guard of b changed; then which, into why. */
static int guard_damaged(block *b, char *why, size_t cap)
{
    unsigned char *tail = payload(b) + b->size;
    int head = b->magic != HEAD_MAGIC, tail_bad = 0;
    for (int i = 0; i < GUARD_BYTES; i++) {
        head |= b->head[i] != GUARD_FILL;
        tail_bad |= tail[i] != GUARD_FILL;
    }
    if (head || tail_bad)
        snprintf(why, cap,
                 "the memory just %s a block of %zu bytes from host->alloc was "
                 "overwritten",
                 head && tail_bad ? "before and past the end of"
                 : head           ? "before"
                                  : "past the end of",
                 b->size);
    return head || tail_bad;
}

static void *count_alloc(void *user, size_t size, size_t align)
{
    (void)user;
    if (align < 16)
        align = 16;
    size_t prefix = (sizeof(block) + align - 1) / align * align;
    if (size > SIZE_MAX - prefix - GUARD_BYTES - align)
        return NULL;
    size_t total = (prefix + size + GUARD_BYTES + align - 1) / align * align;
    unsigned char *raw = aligned_alloc(align, total);
    if (!raw)
        return NULL;
    block *b = (block *)(raw + prefix) - 1;
    b->size = size;
    b->prefix = prefix;
    b->magic = HEAD_MAGIC;
    memset(b->head, GUARD_FILL, GUARD_BYTES);
    memset(payload(b) + size, GUARD_FILL, GUARD_BYTES);
    pthread_mutex_lock(&g_blocks_lock);
    b->prev = NULL;
    b->next = g_blocks;
    if (g_blocks)
        g_blocks->prev = b;
    g_blocks = b;
    pthread_mutex_unlock(&g_blocks_lock);
    atomic_fetch_add(&g_live_bytes, (long long)size);
    return payload(b);
}

static void count_free(void *user, void *ptr)
{
    (void)user;
    if (!ptr)
        return;
    block *b = (block *)ptr - 1;
    char why[200];
    int bad = guard_damaged(b, why, sizeof why);
    pthread_mutex_lock(&g_blocks_lock);
    if (bad && g_freed_damaged++ == 0)
        snprintf(g_freed_what, sizeof g_freed_what, "%s (found when it was freed)", why);
    if (b->prev)
        b->prev->next = b->next;
    else
        g_blocks = b->next;
    if (b->next)
        b->next->prev = b->prev;
    pthread_mutex_unlock(&g_blocks_lock);
    atomic_fetch_sub(&g_live_bytes, (long long)b->size);
    free((unsigned char *)ptr - b->prefix);
}

int ck_heap_check(char *what, size_t cap)
{
    char why[200];
    pthread_mutex_lock(&g_blocks_lock);
    int n = g_freed_damaged;
    if (n)
        snprintf(what, cap, "%s", g_freed_what);
    g_freed_damaged = 0;
    for (block *b = g_blocks; b; b = b->next)
        if (guard_damaged(b, why, sizeof why) && n++ == 0)
            snprintf(what, cap, "%s", why);
    pthread_mutex_unlock(&g_blocks_lock);
    return n;
}

/* ---- the error log ---- */

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

void ck_logged_add(int n, const char *first)
{
    if (n > 0 && atomic_fetch_add(&g_log_errors, n) == 0) {
        pthread_mutex_lock(&g_log_lock);
        snprintf(g_first_error, sizeof g_first_error, "%s", first);
        pthread_mutex_unlock(&g_log_lock);
    }
}

/* ---- what the kit is doing, for a crash or a hang ---- */

static char g_doing[768] = "starting";
static char g_step[96];
static ck_doing_fn g_doing_hook, g_step_hook;

/* Formats into dst (cap <= sizeof g_doing bytes). The handlers read it asynchronously: it is
   copied whole, so that it is always terminated. */
static void vset(char *dst, size_t cap, const char *fmt, va_list ap)
{
    char buf[sizeof g_doing];
    vsnprintf(buf, cap, fmt, ap);
    memcpy(dst, buf, cap);
}

void ck_doing(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_step[0] = '\0';
    vset(g_doing, sizeof g_doing, fmt, ap);
    va_end(ap);
    if (g_doing_hook)
        g_doing_hook(g_doing);
}

void ck_step(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(g_step, sizeof g_step, fmt, ap);
    va_end(ap);
    if (g_step_hook)
        g_step_hook(g_step);
}

const char *ck_doing_now(void)
{
    return g_doing;
}

void ck_doing_hook(ck_doing_fn fn, ck_doing_fn step_fn)
{
    g_doing_hook = fn;
    g_step_hook = step_fn;
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

/* g_doing, then " (<step>)" when there is one, and a new line. */
static void say_doing(void)
{
    say(g_doing);
    if (g_step[0]) {
        say(" (");
        say(g_step);
        say(")");
    }
    say("\n");
}

static void on_fatal(int sig)
{
    /* async-signal-safe only: write(2), then die of the same signal */
    say("\ntenferro check-engine: ");
    if (sig == SIGALRM) {
        say("timed out (--timeout) while: ");
        say_doing();
        _exit(1);
    }
    say(sig == SIGSEGV  ? "the engine crashed (SIGSEGV)"
        : sig == SIGBUS ? "the engine crashed (SIGBUS)"
        : sig == SIGFPE ? "the engine crashed (SIGFPE)"
        : sig == SIGILL ? "the engine crashed (SIGILL)"
                        : "the engine aborted (SIGABRT)");
    say(" while: ");
    say_doing();
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int k_fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void ck_guard_install(unsigned timeout_s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof k_fatal / sizeof k_fatal[0]; i++)
        sigaction(k_fatal[i], &sa, NULL);
    if (timeout_s) {
        sigaction(SIGALRM, &sa, NULL);
        alarm(timeout_s);
    }
}

void ck_guard_remove(void)
{
    for (size_t i = 0; i < sizeof k_fatal / sizeof k_fatal[0]; i++)
        signal(k_fatal[i], SIG_DFL);
    alarm(0);
    signal(SIGALRM, SIG_DFL);
}
