/*
 * How a piece is registered and reads its settings. A piece is registered by the name users know
 * (GpPlugin.name, e.g. "priority/multifactor") in its kind's list, in its own C file; the binding
 * (module.c) finds it there by the name the Python side passes, and its setup reads its own
 * settings, by name, from one mapping (the piece's `for_engine()` on the Python side), attaches its
 * state to the engine and registers its operations. Adding a plugin of a kind touches that file
 * only; the list of kinds is in sim/slurm/_core/plugins.h.
 */
#ifndef GPUPLAN_PIECES_H
#define GPUPLAN_PIECES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"

/* Buffers read from settings, released when the run is over. */
#define GP_MAX_BUFFERS 64
typedef struct {
    Py_buffer views[GP_MAX_BUFFERS];
    int count;
} GpBuffers;

/* One piece's settings: a mapping read by name. Every key must be read (a key no piece reads is a
 * mistake, reported rather than ignored). */
typedef struct {
    PyObject *mapping;
    const char *piece; /* its name, for messages */
    Py_ssize_t n_jobs; /* per-job arrays hold this many items */
    Py_ssize_t read;   /* keys read so far */
    GpBuffers *buffers;
} GpSettings;

typedef struct {
    const char *name;  /* the name users know: "sched/backfill", "preempt/qos" */
    const char *about; /* one line */
    /* read the settings, attach the state and operations; -1 with a Python exception set */
    int (*setup)(Sim *sim, GpSettings *settings);
} GpPlugin;

/* Read a setting by name; -1 with a Python exception set (missing, wrong type). */
int gp_read_double(GpSettings *s, const char *key, double *out);
int gp_read_int(GpSettings *s, const char *key, int64_t *out);
int gp_read_bool(GpSettings *s, const char *key, int *out);
/* An object (borrowed reference); Py_None when `optional` and the key is absent. */
int gp_read_object(GpSettings *s, const char *key, int optional, PyObject **out);
/*
 * A C-contiguous array of `count` items of `itemsize` bytes (count < 0: any whole number of
 * items, their number in *items); writable for an output. With `optional`, an absent key or None
 * gives NULL. The buffer is held until the run is over.
 */
int gp_read_array(GpSettings *s, const char *key, Py_ssize_t itemsize, Py_ssize_t count, int writable,
                  int optional, void **out, Py_ssize_t *items);
/* After a piece's setup: every key was read. */
int gp_settings_done(GpSettings *s);

/* Is each of `count` values an index in [0, bound)? Else a ValueError from `message` (a format
 * taking the position). */
int gp_check_indices(const int32_t *values, Py_ssize_t count, Py_ssize_t bound, const char *message);

#endif
