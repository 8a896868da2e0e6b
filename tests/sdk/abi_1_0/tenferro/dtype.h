/*
 * tests/sdk/abi_1_0: the public header dtype.h as it was when the engine ABI was
 * 1.0 (git show 231a034:core/include/tenferro/dtype.h), kept unchanged below this
 * comment. The version-skew test builds the SDK's engine template against
 * these headers alone, as a plugin built with an older SDK was, and checks
 * that today's library loads it and the conformance kit passes it.
 */
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
    TF_BOOL = 4 /* one byte per element, 0 or 1 (masks, comparison results) */
} tf_dtype;

#define TF_DTYPE_COUNT 5

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
    }
    return 0;
}

/* Short name ("f32", "f64", "i32", "i64", "bool"), or "?" for an unknown value. */
static inline const char *tf_dtype_name(tf_dtype dtype)
{
    switch (dtype) {
    case TF_F32: return "f32";
    case TF_F64: return "f64";
    case TF_I32: return "i32";
    case TF_I64: return "i64";
    case TF_BOOL: return "bool";
    }
    return "?";
}

/* Non-zero for a valid tf_dtype value. */
static inline int tf_dtype_is_valid(int dtype)
{
    return dtype >= 0 && dtype < TF_DTYPE_COUNT;
}

/* Non-zero for TF_F32 and TF_F64. */
static inline int tf_dtype_is_float(tf_dtype dtype)
{
    return dtype == TF_F32 || dtype == TF_F64;
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
