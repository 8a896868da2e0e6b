/*
 * tests/sdk/abi_1_2: the public header status.h as it was when the engine ABI was
 * 1.2 (git show adfabce:core/include/tenferro/status.h), kept unchanged below this
 * comment. The version-skew test builds the SDK's engine template against
 * these headers alone, as a plugin built with an older SDK was, and checks
 * that today's library loads it and the conformance kit passes it.
 */
/*
 * tenferro/status.h - status codes and the per-thread last error.
 *
 * Every call of the public API that can fail returns a tf_status: TF_OK (0) on
 * success, one of the codes below otherwise. Out-parameters are written only on
 * success. The detail of the most recent failure on the calling thread (a
 * message naming the op, the argument and the values, and the underlying cause
 * where there is one) stays in a per-thread slot until the next failure on the
 * same thread or tf_error_clear().
 *
 * One X-macro list (TF_STATUS_LIST) generates the enum, the names returned by
 * tf_status_name() and the default messages returned by tf_status_message().
 * The numeric values are part of the ABI: codes are only ever appended.
 */
#ifndef TENFERRO_STATUS_H
#define TENFERRO_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, default message) */
#define TF_STATUS_LIST(X)                                                              \
    X(TF_OK, 0, "success")                                                             \
    X(TF_ERR_VALIDATION, 1, "invalid argument")                                        \
    X(TF_ERR_UNSUPPORTED, 2, "operation not supported")                                \
    X(TF_ERR_CONTEXT_MISMATCH, 3, "tensors belong to different runtimes")              \
    X(TF_ERR_NON_SCALAR_GRAD, 4, "gradient requested of a non-scalar output")          \
    X(TF_ERR_UNSUPPORTED_AD_RULE, 5, "no AD rule for this operation")                  \
    X(TF_ERR_RUNTIME_STATE, 6, "runtime state unavailable")                            \
    X(TF_ERR_DTYPE_MISMATCH, 7, "dtype mismatch")                                      \
    X(TF_ERR_SHAPE_MISMATCH, 8, "shape mismatch")                                      \
    X(TF_ERR_AXIS_OUT_OF_BOUNDS, 9, "axis out of bounds")                              \
    X(TF_ERR_BACKEND, 10, "engine failure")                                            \
    X(TF_ERR_OUT_OF_MEMORY, 11, "out of memory")                                       \
    X(TF_ERR_PLUGIN_ABI, 12, "plugin built for another ABI major version")             \
    X(TF_ERR_PLUGIN_LOAD, 13, "plugin is not a loadable shared object")                \
    X(TF_ERR_CONFIG, 14, "bad configuration")                                          \
    X(TF_ERR_ELEMENT_COUNT, 15, "element count does not match the shape")              \
    X(TF_ERR_SHAPE_OVERFLOW, 16, "shape product overflows")                            \
    X(TF_ERR_RANK_TOO_LARGE, 17, "rank exceeds TF_MAX_RANK")                           \
    X(TF_ERR_NOT_CONTIGUOUS, 18, "tensor is a non-contiguous view")                    \
    X(TF_ERR_PLACEMENT, 19, "tensor is not in the memory the caller asked for")        \
    X(TF_ERR_PLUGIN_NOT_FOUND, 20, "plugin file not found")                            \
    X(TF_ERR_PLUGIN_SYMBOL, 21, "plugin has no entry symbol")                          \
    X(TF_ERR_PLUGIN_STRUCT_SIZE, 22, "plugin descriptor is smaller than the minimum")  \
    X(TF_ERR_PLUGIN_MISSING_FUNCTION, 23, "plugin lacks a required function")          \
    X(TF_ERR_PLUGIN_INIT, 24, "plugin initialisation failed")                          \
    X(TF_ERR_OUT_OF_RANGE, 25, "value out of range")                                   \
    X(TF_ERR_EXTENSION, 26, "extension op failed")                                     \
    X(TF_ERR_DEVICE_LOST, 27, "device lost")

typedef enum tf_status {
#define TF_STATUS_ENUM_(name, value, msg) name = value,
    TF_STATUS_LIST(TF_STATUS_ENUM_)
#undef TF_STATUS_ENUM_
} tf_status;

/* One past the largest code of this version of the header. */
#define TF_STATUS_COUNT_ 28

/*
 * The code's name, e.g. "TF_ERR_VALIDATION"; "TF_UNKNOWN_STATUS" for a value
 * this build does not know. Returns a static string. Any thread.
 */
const char *tf_status_name(tf_status status);

/* The code's default one-line message. Static string. Any thread. */
const char *tf_status_message(tf_status status);

/*
 * The status of the most recent failure on this thread (TF_OK if none since
 * the last tf_error_clear()).
 */
tf_status tf_error_status(void);

/*
 * The detailed message of the most recent failure on this thread, naming the
 * op, the argument and the offending values. Never NULL ("" if none). The
 * string is owned by the thread's slot and stays valid until the next failure
 * on this thread or tf_error_clear().
 */
const char *tf_error_message(void);

/* The op that failed ("" if none or not op-related). Same lifetime as above. */
const char *tf_error_op(void);

/* The name of the offending argument ("" if none). Same lifetime as above. */
const char *tf_error_argument(void);

/*
 * The underlying cause, e.g. the message an engine plugin reported or the
 * text of dlerror() ("" if none). Same lifetime as above.
 */
const char *tf_error_cause(void);

/* Resets this thread's slot to TF_OK with empty strings. */
void tf_error_clear(void);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_STATUS_H */
