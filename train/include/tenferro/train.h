/*
 * tenferro/train.h - what the training library (libtenferro-train) shares
 * between its parts: optimizers (optim.h), checkpoints in safetensors
 * (checkpoint.h) and data-parallel training over MPI (dp.h).
 *
 * The library is written on the public API of libtenferro only, the way a
 * third party would write it: it includes no private header and uses no
 * internal symbol. An application links tenferro::train (CMake) or
 * tenferro-train (pkg-config) besides tenferro.
 *
 * Errors. Every call that can fail returns a tf_status (status.h) and writes
 * its out-parameters only on success. The application API of libtenferro
 * gives a library no way to write the core's per-thread error slot, so this
 * library keeps its own: after a failed call of this library,
 * tf_train_error_message() names the call, the argument and the values (for
 * a failure of a libtenferro call it made, the core's message and cause are
 * quoted in it) and tf_train_error_argument() the argument. tf_error_message()
 * and friends keep describing the last failure of libtenferro itself.
 *
 * Threads: the slot is per thread, like the core's.
 */
#ifndef TENFERRO_TRAIN_H
#define TENFERRO_TRAIN_H

#include <tenferro/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TF_TRAIN_API __attribute__((visibility("default")))
#else
#define TF_TRAIN_API
#endif

/*
 * The detail of the most recent failure of a call of this library on the
 * calling thread, "" if none since tf_train_error_clear(). The string lives
 * in the thread's slot until the next failure on the thread or a clear.
 */
TF_TRAIN_API const char *tf_train_error_message(void);

/* The name of the argument that call refused ("" if none). Same lifetime. */
TF_TRAIN_API const char *tf_train_error_argument(void);

/* The status of that failure (TF_OK if none). */
TF_TRAIN_API tf_status tf_train_error_status(void);

/* Resets this thread's slot. */
TF_TRAIN_API void tf_train_error_clear(void);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_TRAIN_H */
