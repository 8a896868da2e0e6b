/*
 * checkpoint_internal.h - the pieces of checkpoint.h: the in-memory
 * checkpoint (checkpoint.c), the safetensors header as JSON
 * (checkpoint_json.c), the row-major <-> column-major reordering
 * (checkpoint_layout.c), the file I/O (checkpoint_io.c) and the optimizer
 * glue (checkpoint_optim.c).
 */
#ifndef TF_CHECKPOINT_INTERNAL_H
#define TF_CHECKPOINT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <tenferro/checkpoint.h>

#include "train_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written and read in host byte order, which must be little-endian"
#endif

typedef struct ck_item {
    char *name;
    tf_tensor *tensor; /* retained */
} ck_item;

typedef struct ck_meta {
    char *key, *value;
} ck_meta;

struct tf_checkpoint {
    ck_item *items;
    size_t n, cap;
    ck_meta *meta;
    size_t n_meta, cap_meta;
};

/* A copy of s (NULL when out of memory). */
char *ck_strdup(const char *s);

/* Whether the n bytes of s are valid UTF-8 (no overlong forms, no surrogates). */
int ck_utf8_valid(const char *s, size_t n);

/* Adds an item without checks, taking over `name` and a reference to tensor. */
tf_status ck_push(tf_checkpoint *ck, char *name, tf_tensor *tensor);

/* ---- the header ---- */

/* One tensor's entry in a header being read or written. */
typedef struct ck_entry {
    char *name;
    tf_dtype dtype;
    size_t rank;
    int64_t shape[TF_MAX_RANK];
    uint64_t begin, end; /* relative to the data section */
} ck_entry;

typedef struct ck_header {
    ck_entry *e;
    size_t n, cap;
    ck_meta *meta;
    size_t n_meta, cap_meta;
} ck_header;

/* The safetensors dtype name of a tenferro dtype ("F64"...). */
const char *ck_dtype_name(tf_dtype dtype);

/*
 * Parses and checks a header of `len` bytes read from `path` (for messages):
 * the JSON form, names, dtypes, shapes and that the entries tile the
 * `data_len` bytes of data exactly. On success *h holds the entries sorted
 * by begin. On failure *h is empty (everything freed) and the error is
 * recorded.
 */
tf_status ck_header_parse(const char *path, const char *json, size_t len, uint64_t data_len,
                          ck_header *h);
void ck_header_free(ck_header *h);

/*
 * Writes the JSON of the header (entries and metadata) into a new buffer,
 * padded with spaces so that 8 + *len is a multiple of 8. *json is freed
 * with tt_free.
 */
tf_status ck_header_write(const ck_header *h, char **json, size_t *len);

/* ---- layout ---- */

/* Whether a tensor of this shape is the same bytes in row-major and column-major order. */
int ck_layout_trivial(size_t rank, const int64_t *shape);

/*
 * Moves rows [i0, i1) of axis 0 between a dense column-major array `cm`
 * (the whole tensor) and a dense row-major chunk `rm` holding just those
 * rows: to_rm != 0 copies cm -> rm (saving), 0 copies rm -> cm (loading).
 * esize is 1, 4 or 8. rank >= 1.
 */
void ck_layout_rows(void *cm, void *rm, size_t rank, const int64_t *shape, size_t esize,
                    int64_t i0, int64_t i1, int to_rm);

/* ---- file I/O on a second thread (checkpoint_pipe.c) ---- */

#define CK_PIPE_SLOTS 3
#define CK_PIPE_EOF (-1) /* the error of a read that met the end of the file */

typedef struct ck_pipe_job {
    char *buf;
    size_t n;
    uint64_t at;
    int state;
} ck_pipe_job;

typedef struct ck_pipe {
    int fd, writing, threaded, closing;
    unsigned slots; /* buffers in use: CK_PIPE_SLOTS with a thread, else 1 */
    int err; /* the first failure: an errno value or CK_PIPE_EOF; 0: none */
    size_t cap;
    unsigned head, tail; /* jobs submitted; jobs waited for (loading) */
    ck_pipe_job job[CK_PIPE_SLOTS];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} ck_pipe;

/* n bytes at file offset `at`, written or read whole; returns 0 or an errno value
   (CK_PIPE_EOF: a read met the end of the file). */
int ck_io_at(int fd, int writing, void *data, size_t n, uint64_t at);

/*
 * Opens a pipe over fd for writing (writing != 0) or reading, with buffers
 * of chunk_bytes, on a thread of its own when `threaded` (and one can be
 * made; else every job runs in the call that submits it). Returns -1 when
 * out of memory, else 0.
 */
int ck_pipe_open(ck_pipe *p, int fd, int writing, size_t chunk_bytes, int threaded);
/* Saving: the next buffer to fill (once its earlier write is over), then
   ck_pipe_submit of its first n bytes at file offset `at`. NULL after a failure. */
void *ck_pipe_buffer(ck_pipe *p);
void ck_pipe_submit(ck_pipe *p, size_t n, uint64_t at);
/*
 * Loading: asks for n bytes at `at` (at most p->slots requests not yet
 * waited for; -1 beyond, or after a failure); ck_pipe_wait returns the
 * oldest one's bytes (NULL after a failure, or with nothing requested),
 * the caller's until its next call of ck_pipe_request or ck_pipe_wait.
 */
int ck_pipe_request(ck_pipe *p, size_t n, uint64_t at);
const void *ck_pipe_wait(ck_pipe *p);
/* The first failure so far (0: none). */
int ck_pipe_error(ck_pipe *p);
/* Waits for every job, ends the thread, frees the buffers; returns the first failure. */
int ck_pipe_close(ck_pipe *p);

#endif /* TF_CHECKPOINT_INTERNAL_H */
