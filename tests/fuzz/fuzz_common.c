/*
 * fuzz_common.c - the input reader and the fixed environment of the
 * harnesses (fuzz_common.h).
 */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t fz_u8(fz_reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

uint32_t fz_u32(fz_reader *r)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | fz_u8(r);
    return v;
}

uint64_t fz_u64(fz_reader *r)
{
    uint64_t hi = fz_u32(r);
    return hi << 32 | fz_u32(r);
}

uint32_t fz_below(fz_reader *r, uint32_t n)
{
    if (n == 0)
        return 0;
    return n <= 256 ? fz_u8(r) % n : fz_u32(r) % n;
}

int64_t fz_extent(fz_reader *r)
{
    uint8_t b = fz_u8(r);
    switch (b >> 5) {
    case 7: /* the edges the checks must catch: negatives, overflowing products */
        switch (b & 7) {
        case 0: return -1;
        case 1: return INT64_MAX;
        case 2: return INT64_MIN;
        case 3: return (int64_t)1 << 32;
        case 4: return ((int64_t)1 << 62) + 1;
        case 5: return -(int64_t)fz_u8(r);
        default: return (int64_t)fz_u64(r);
        }
    case 6: return b & 31; /* up to 31 */
    default: return b & 3; /* 0..3: small shapes, empty tensors */
    }
}

size_t fz_string(fz_reader *r, char *buf, size_t cap)
{
    size_t n = fz_u8(r);
    if (n > r->n)
        n = r->n;
    if (n > cap - 1)
        n = cap - 1;
    memcpy(buf, r->p, n);
    buf[n] = '\0';
    r->p += n;
    r->n -= n;
    return strlen(buf); /* an embedded NUL ends the string, as it would in C */
}

void fz_setup_environment(void)
{
    /* The loader reads TENFERRO_CONFIG's [plugins] path on every search: an
       empty file keeps /etc and ~/.config out of every run. */
    setenv("TENFERRO_CONFIG", "/dev/null", 1);
    setenv("TENFERRO_PLUGIN_PATH", TF_FUZZ_PLUGIN_DIR ":" TF_FUZZ_EXT_DIR, 1);
    unsetenv("TENFERRO_ENGINE");
}

void fz_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: broken promise: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/*
 * A request the library accepts as valid but no machine can hold (a pad to
 * 2^60 elements) must come back as TF_ERR_OUT_OF_MEMORY, as it would from
 * the C library, rather than stop ASan. Below that, the harnesses keep every
 * result small themselves.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
