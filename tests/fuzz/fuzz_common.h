/*
 * fuzz_common.h - what the libFuzzer harnesses share: a reader that turns
 * the fuzz input into bounded values (every read is defined even when the
 * input runs out, so each input maps to exactly one call sequence), a fixed
 * environment, and the check that ends a run when the library breaks a
 * promise (libFuzzer then records the input as a crash).
 */
#ifndef TF_FUZZ_COMMON_H
#define TF_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

typedef struct fz_reader {
    const uint8_t *p;
    size_t n;
} fz_reader;

uint8_t fz_u8(fz_reader *r);
uint32_t fz_u32(fz_reader *r);
uint64_t fz_u64(fz_reader *r);
/* A value in 0..n-1 (0 when n is 0). */
uint32_t fz_below(fz_reader *r, uint32_t n);
/* An extent or index: mostly tiny, sometimes negative or huge (overflow checks). */
int64_t fz_extent(fz_reader *r);
/* Copies up to cap-1 bytes of the input into buf, NUL-terminated; length first. */
size_t fz_string(fz_reader *r, char *buf, size_t cap);

/*
 * Pins the environment the library reads: the build tree's plugin and
 * extension folders, no engine override, an empty configuration file, so a
 * run never depends on the machine's or the user's settings. Call once.
 */
void fz_setup_environment(void);

/* Aborts with a message (a crash libFuzzer keeps) when ok is false. */
#define FZ_CHECK(ok, ...) ((ok) ? (void)0 : fz_fail(__FILE__, __LINE__, __VA_ARGS__))
_Noreturn void fz_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* TF_FUZZ_COMMON_H */
