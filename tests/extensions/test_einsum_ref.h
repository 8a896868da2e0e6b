/*
 * test_einsum_ref.h - the referee of the einsum tests: NumPy's einsum evaluated
 * the plain way, one loop over the whole index space, with its own small
 * parser (independent of the module's), and a generator of random
 * expressions (repeated indices, ellipses, broadcasting, non-ASCII indices,
 * 1 to 8 operands, rank 0).
 */
#ifndef TEST_EINSUM_REF_H
#define TEST_EINSUM_REF_H

#include <stddef.h>
#include <stdint.h>

#define REF_MAX_OPS 16

/* One expression with its operands' shapes (column-major data elsewhere). */
typedef struct ref_case {
    char subscripts[256];
    uint32_t n;
    uint32_t rank[REF_MAX_OPS];
    int64_t shape[REF_MAX_OPS][8];
} ref_case;

/*
 * out = einsum(c->subscripts, data...) for a valid expression: fills
 * out_shape/out_rank and writes the column-major result to out (room for
 * `cap` elements). Returns 0, or -1 when the expression is invalid or the
 * output does not fit (the tests only call it on valid ones).
 */
int ref_einsum(const ref_case *c, const double *const *data, double *out, size_t cap,
               uint32_t *out_rank, int64_t *out_shape);

/* A random valid expression (deterministic from *seed); operands 1..max_ops. */
void ref_random_case(unsigned *seed, uint32_t max_ops, ref_case *c);

/* Element count of a shape. */
size_t ref_numel(uint32_t rank, const int64_t *shape);

#endif /* TEST_EINSUM_REF_H */
