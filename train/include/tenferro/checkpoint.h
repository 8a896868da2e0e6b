/*
 * tenferro/checkpoint.h - checkpoints in safetensors, the format PyTorch and
 * its ecosystem exchange weights in: named tensors and string metadata.
 *
 * The file: 8 bytes, the little-endian length N of the header; N bytes of
 * UTF-8 JSON, an object mapping each tensor's name to
 * {"dtype": "F64", "shape": [2, 3], "data_offsets": [begin, end]} and
 * "__metadata__" to an object of strings; then the data, each tensor's
 * bytes at [begin, end) relative to the end of the header, little-endian.
 * dtypes: F32, F64, I32, I64, BOOL (one byte, 0 or 1) - tenferro's f32, f64,
 * i32, i64 and bool.
 *
 * Layout. safetensors data is row-major (C order, what torch and numpy
 * write), tenferro's is column-major. A tensor of shape [d0, ..., dk] is
 * saved with the same shape and its elements in row-major order, so that
 * element (i0, ..., ik) is the same number in both: a PyTorch user loading
 * the file with safetensors.torch.load_file sees the same logical tensor
 * (t[i][j] is tenferro's element (i, j)), and loading reverses the mapping.
 * Tensors of rank 0 or 1, and any whose extents other than one are all 1,
 * need no reordering; the others are transposed in blocks on the way.
 *
 * Saving writes a temporary file beside `path` and renames it over `path`
 * once complete, so a reader never sees half a checkpoint (the rename is
 * not followed by fsync: durability across a power failure is the file
 * system's). Data is laid out as the safetensors library does: the header
 * padded with spaces to a multiple of 8 bytes, tensors ordered by element
 * size (largest first), so each one starts aligned to its element size.
 *
 * Loading checks everything before it makes a tensor, and refuses every
 * malformed file with nothing loaded: a length N of less than 2, more than
 * 100,000,000 or past the end of the file; a header that is not UTF-8 JSON
 * of the form above (bad syntax, a string with a NUL, a value of the wrong
 * type, an unknown or missing field, a header not beginning with "{" or
 * with anything but whitespace after the object); a duplicate tensor name
 * or metadata key; an unknown dtype; a shape whose
 * byte size overflows or differs from end - begin; offsets that overlap,
 * leave a hole, lie past the data or leave bytes after the last tensor;
 * data cut short; a BOOL byte other than 0 or 1.
 *
 * Errors (tf_status, the detail in tf_train_error_message() as train.h says):
 *   TF_ERR_VALIDATION     a NULL argument, a bad name or key; a malformed
 *                         file (argument "path"; the message names the file,
 *                         the header byte or tensor, what was expected and
 *                         what was found);
 *   TF_ERR_UNSUPPORTED    a valid safetensors file tenferro cannot hold: a
 *                         dtype it lacks (F16, BF16, U8, ...), a rank above
 *                         TF_MAX_RANK (argument "path");
 *   TF_ERR_RUNTIME_STATE  the file system refused (open, read, write,
 *                         rename: the message quotes strerror) (argument
 *                         "path");
 *   TF_ERR_OUT_OF_MEMORY, and the engine's errors for downloads and uploads.
 *
 * Threads: a checkpoint is used by one thread at a time; the tensors in it
 * are immutable and may be shared.
 */
#ifndef TENFERRO_CHECKPOINT_H
#define TENFERRO_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <tenferro/engine.h>
#include <tenferro/optim.h>
#include <tenferro/train.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_checkpoint tf_checkpoint;

/* The largest header a file may have, in bytes (the safetensors library's limit). */
#define TF_CHECKPOINT_MAX_HEADER 100000000u

/* An empty checkpoint. Errors: TF_ERR_VALIDATION (NULL), TF_ERR_OUT_OF_MEMORY. */
TF_TRAIN_API tf_status tf_checkpoint_create(tf_checkpoint **out);

/* Releases the checkpoint and its references to tensors. NULL is a no-op. */
TF_TRAIN_API void tf_checkpoint_destroy(tf_checkpoint *ck);

/*
 * Adds `tensor` (retained; any placement and strides; f32, f64, i32, i64,
 * bool or c64, safetensors' C64) under `name` (copied: non-empty valid UTF-8,
 * not "__metadata__", not already in the checkpoint). Errors:
 * TF_ERR_VALIDATION (argument "name", "tensor"), TF_ERR_UNSUPPORTED
 * ("tensor": c128, which safetensors has no dtype for); nothing is added
 * then.
 */
TF_TRAIN_API tf_status tf_checkpoint_add(tf_checkpoint *ck, const char *name, tf_tensor *tensor);

/*
 * Sets metadata `key` to `value` (both copied, valid UTF-8; key non-empty),
 * replacing an earlier value. Errors: TF_ERR_VALIDATION (argument "key",
 * "value").
 */
TF_TRAIN_API tf_status tf_checkpoint_set_meta(tf_checkpoint *ck, const char *key,
                                              const char *value);

/* Tensors in order (added, or file order after a load); i < count. Borrowed. */
TF_TRAIN_API size_t tf_checkpoint_count(const tf_checkpoint *ck);
TF_TRAIN_API const char *tf_checkpoint_name(const tf_checkpoint *ck, size_t i);
TF_TRAIN_API tf_tensor *tf_checkpoint_tensor(const tf_checkpoint *ck, size_t i);

/* The tensor named `name` (borrowed, valid while ck is), or NULL. */
TF_TRAIN_API tf_tensor *tf_checkpoint_find(const tf_checkpoint *ck, const char *name);

/* Metadata: the value of `key` (borrowed), or NULL; and the keys in order. */
TF_TRAIN_API const char *tf_checkpoint_meta(const tf_checkpoint *ck, const char *key);
TF_TRAIN_API size_t tf_checkpoint_meta_count(const tf_checkpoint *ck);
TF_TRAIN_API const char *tf_checkpoint_meta_key(const tf_checkpoint *ck, size_t i);

/*
 * Writes the checkpoint to `path` (replacing the file atomically, see the
 * file comment). Tensors in device memory are downloaded through their
 * engine. Errors as the file comment says; on failure `path` is untouched
 * and no temporary file remains.
 */
TF_TRAIN_API tf_status tf_checkpoint_save(const tf_checkpoint *ck, const char *path);

/*
 * Reads the safetensors file `path`. With engine NULL the tensors are host
 * tensors; otherwise they are uploaded into the engine's memory. All or
 * nothing: on any failure *out is untouched and nothing stays allocated.
 */
TF_TRAIN_API tf_status tf_checkpoint_load(const char *path, tf_engine *engine,
                                          tf_checkpoint **out);

/* ---- optimizers (optim.h) ---- */

/*
 * Adds an optimizer's parameters and state: parameter i as names[i] (n ==
 * tf_optim_param_count(opt)), its state tensors as "optim.<names[i]>.<state
 * name>" (exp_avg, ...), and as metadata "optim.kind" (sgd, adam, adamw),
 * "optim.steps", "optim.<names[i]>.steps", the group of each parameter and
 * every group's hyperparameters ("optim.group.<g>.lr", ...; doubles written
 * so that they read back exactly). All or nothing. Errors: TF_ERR_VALIDATION
 * (argument "names": wrong count, NULL or repeated names; a name taken).
 */
TF_TRAIN_API tf_status tf_checkpoint_add_optim(tf_checkpoint *ck, const tf_optim *opt,
                                               const char *const *names, size_t n);

/*
 * Restores what tf_checkpoint_add_optim saved into `opt`, which must have
 * the same kind and parameter layout (groups of the same sizes, parameters
 * of the same dtypes and shapes): the parameters' values, their state and
 * step counts, the groups' hyperparameters and the step count. Everything is
 * checked first; on any refusal opt is unchanged. Errors: TF_ERR_VALIDATION
 * (argument "ck": an entry missing, another kind or layout, a malformed
 * number; "names"), TF_ERR_DTYPE_MISMATCH / TF_ERR_SHAPE_MISMATCH (argument
 * "ck"), TF_ERR_OUT_OF_MEMORY.
 */
TF_TRAIN_API tf_status tf_checkpoint_restore_optim(const tf_checkpoint *ck, tf_optim *opt,
                                                   const char *const *names, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* TENFERRO_CHECKPOINT_H */
