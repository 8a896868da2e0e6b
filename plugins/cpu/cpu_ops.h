/*
 * cpu_ops.h - the float UNARY and BINARY operations that are one exact
 * expression (IEEE + - * /, sqrt, comparisons, rounding to an integer), for
 * f32 and f64, and the IEEE maximum / minimum.
 *
 * One text serves two compilers: cpu_elementwise.c builds its row functions
 * from these lists, and the hot-program compiler (cpu_jit.c) puts this very
 * file at the top of every program it generates, so a compiled FUSED program
 * computes each step with the expression of that step's row and gives its
 * bits. Self-contained on purpose (C11 and <math.h> only): it is compiled
 * again, outside the tree, at run time.
 */
#ifndef TENFERRO_CPU_OPS_H
#define TENFERRO_CPU_OPS_H

#include <math.h>

static inline float cpu_sign_f32(float a)
{
    return a > 0 ? 1.0f : a < 0 ? -1.0f : a == 0 ? 0.0f : a;
}

static inline double cpu_sign_f64(double a)
{
    return a > 0 ? 1.0 : a < 0 ? -1.0 : a == 0 ? 0.0 : a;
}

/* IEEE 754-2019 maximum / minimum: NaN if either is NaN, else the larger /
   smaller, with -0 < +0 (so the result does not depend on the argument
   order, which a plain comparison would decide for equal zeros). */
#define CPU_FMAX(a, b) \
    ((a) != (a) || (b) != (b) ? (a) + (b) : (a) > (b) || ((a) == (b) && !signbit(a)) ? (a) : (b))
#define CPU_FMIN(a, b) \
    ((a) != (a) || (b) != (b) ? (a) + (b) : (a) < (b) || ((a) == (b) && signbit(a)) ? (a) : (b))

/* X(OP, f32 expression of a, f64 expression of a): TF_UNARY_<OP>. */
#define CPU_UNARY_EXACT(X)                                  \
    X(NEG, -a, -a)                                          \
    X(ABS, fabsf(a), fabs(a))                               \
    X(SIGN, cpu_sign_f32(a), cpu_sign_f64(a))               \
    X(SQRT, sqrtf(a), sqrt(a))                              \
    X(RSQRT, 1.0f / sqrtf(a), 1.0 / sqrt(a))                \
    X(RECIPROCAL, 1.0f / a, 1.0 / a)                        \
    X(SQUARE, a *a, a *a)                                   \
    X(FLOOR, floorf(a), floor(a))                           \
    X(CEIL, ceilf(a), ceil(a))

/* X(OP, expression of a and b, the same for both dtypes): TF_BINARY_<OP>. */
#define CPU_BINARY_EXACT(X)   \
    X(ADD, a + b)             \
    X(SUB, a - b)             \
    X(MUL, a *b)              \
    X(DIV, a / b)             \
    X(MAX, CPU_FMAX(a, b))    \
    X(MIN, CPU_FMIN(a, b))

/* X(OP, fold of accumulators a and b): the float REDUCE ops (TF_REDUCE_<OP>), as
   cpu_reduce.c's float kernels fold their double accumulators. */
#define CPU_REDUCE_FLOAT(X)   \
    X(SUM, a + b)             \
    X(PROD, a *b)             \
    X(MAX, CPU_FMAX(a, b))    \
    X(MIN, CPU_FMIN(a, b))

#endif /* TENFERRO_CPU_OPS_H */
