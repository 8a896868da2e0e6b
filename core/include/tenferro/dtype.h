/*
 * tenferro/dtype.h - element types and rank limit.
 *
 * Shared by the app API (tensor.h) and the plugin ABI (engine_abi.h): the
 * numeric values of tf_dtype cross the plugin boundary and are only ever
 * appended to.
 */
#ifndef TENFERRO_DTYPE_H
#define TENFERRO_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tf_dtype {
    TF_F32 = 0, /* IEEE binary32; differentiable */
    TF_F64 = 1, /* IEEE binary64; differentiable */
    TF_I32 = 2, /* two's complement int32 (indices) */
    TF_I64 = 3, /* two's complement int64 (indices) */
    TF_BOOL = 4, /* one byte per element, 0 or 1 (masks, comparison results) */
    /*
     * Complex numbers, differentiable: each element is its real part then its
     * imaginary part, the layout of C99 `float complex` / `double complex`
     * (and std::complex). Engines built against an engine ABI older than 1.4
     * are never asked about them (engine_abi.h).
     */
    TF_C64 = 5, /* two IEEE binary32: re, im */
    TF_C128 = 6 /* two IEEE binary64: re, im */
} tf_dtype;

#define TF_DTYPE_COUNT 7

/* The largest rank of a tensor. Shapes, strides and axis lists are bounded by it. */
#define TF_MAX_RANK 8

/*
 * These helpers are static inline so that plugins, which never link the core,
 * can use them too. Any thread.
 */

/* Size of one element in bytes; 0 for a value that is not a tf_dtype. */
static inline size_t tf_dtype_size(tf_dtype dtype)
{
    switch (dtype) {
    case TF_F32: return 4;
    case TF_F64: return 8;
    case TF_I32: return 4;
    case TF_I64: return 8;
    case TF_BOOL: return 1;
    case TF_C64: return 8;
    case TF_C128: return 16;
    }
    return 0;
}

/*
 * Alignment an element needs in bytes: its size, except for the complex
 * dtypes, which need that of their parts (4 for c64, 8 for c128), as C's
 * complex types do. 0 for a value that is not a tf_dtype.
 */
static inline size_t tf_dtype_align(tf_dtype dtype)
{
    return dtype == TF_C64 ? 4 : dtype == TF_C128 ? 8 : tf_dtype_size(dtype);
}

/* Short name ("f32", "f64", "i32", "i64", "bool", "c64", "c128"), or "?" for an unknown value. */
static inline const char *tf_dtype_name(tf_dtype dtype)
{
    switch (dtype) {
    case TF_F32: return "f32";
    case TF_F64: return "f64";
    case TF_I32: return "i32";
    case TF_I64: return "i64";
    case TF_BOOL: return "bool";
    case TF_C64: return "c64";
    case TF_C128: return "c128";
    }
    return "?";
}

/* Non-zero for a valid tf_dtype value. */
static inline int tf_dtype_is_valid(int dtype)
{
    return dtype >= 0 && dtype < TF_DTYPE_COUNT;
}

/* Non-zero for TF_F32 and TF_F64 (the real floating dtypes; not the complex ones). */
static inline int tf_dtype_is_float(tf_dtype dtype)
{
    return dtype == TF_F32 || dtype == TF_F64;
}

/* Non-zero for TF_C64 and TF_C128. */
static inline int tf_dtype_is_complex(tf_dtype dtype)
{
    return dtype == TF_C64 || dtype == TF_C128;
}

/* Non-zero for the dtypes that carry derivatives: f32, f64, c64 and c128. */
static inline int tf_dtype_is_inexact(tf_dtype dtype)
{
    return tf_dtype_is_float(dtype) || tf_dtype_is_complex(dtype);
}

/*
 * The dtype of a complex dtype's parts (f32 for c64, f64 for c128); any
 * other dtype is returned unchanged.
 */
static inline tf_dtype tf_dtype_real_of(tf_dtype dtype)
{
    return dtype == TF_C64 ? TF_F32 : dtype == TF_C128 ? TF_F64 : dtype;
}

/*
 * The complex dtype whose parts are `dtype` (c64 for f32, c128 for f64); any
 * other dtype (a complex one, an integer, bool) is returned unchanged, so
 * tf_dtype_is_complex() of the result tells whether there is one.
 */
static inline tf_dtype tf_dtype_complex_of(tf_dtype dtype)
{
    return dtype == TF_F32 ? TF_C64 : dtype == TF_F64 ? TF_C128 : dtype;
}

/* Non-zero for TF_I32 and TF_I64. */
static inline int tf_dtype_is_int(tf_dtype dtype)
{
    return dtype == TF_I32 || dtype == TF_I64;
}

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_DTYPE_H */
