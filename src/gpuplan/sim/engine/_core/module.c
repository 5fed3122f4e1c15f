/* Python bindings of the batch engine: gpuplan.sim.engine._batchcore. Every argument is passed by
 * keyword, one mapping per piece read by name (pieces.h); arrays come in through the buffer protocol
 * (NumPy arrays, C-contiguous, dtypes checked by size), so building needs no NumPy headers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fairshare.h"
#include "pieces.h"
#include "plugins.h"
#include "kube.h"

/* The kinds of pieces, by keyword, in the order they are set up (a piece may need an earlier one:
 * lending needs preempt's state) and their hooks are called. */
typedef struct {
    const char *keyword;
    const GpPlugin *plugins;
    int required;
} Kind;

static const Kind KINDS[] = {
    {"scheduler", GP_SCHED_PLUGINS, 1},       {"select", GP_SELECT_PLUGINS, 1},
    {"priority", GP_PRIORITY_PLUGINS, 0},     {"qos", GP_QOS_PLUGINS, 0},
    {"preempt", GP_PREEMPT_PLUGINS, 0},       {"reservations", GP_RESERVATION_PLUGINS, 0},
    {"lending", GP_LENDING_PLUGINS, 0},       {"topology", GP_TOPOLOGY_PLUGINS, 0},
    {"power", GP_POWER_PLUGINS, 0},
};
#define N_KINDS ((int)(sizeof(KINDS) / sizeof(KINDS[0])))

static int check_jobs(Sim *sim) {
    for (int32_t j = 0; j < sim->n_jobs; j++) {
        if (!(sim->run[j] >= 0) || !(sim->estimate[j] >= 0) || !isfinite(sim->submit[j]) ||
            !isfinite(sim->run[j]) || !isfinite(sim->estimate[j])) {
            PyErr_Format(PyExc_ValueError, "job index %d: times must be finite and >= 0", j);
            return -1;
        }
        if (j > 0 && sim->submit[j] < sim->submit[j - 1]) {
            PyErr_Format(PyExc_ValueError, "job index %d: jobs must be sorted by submit time", j);
            return -1;
        }
        if (sim->nodes[j] < 1 || sim->nodes[j] > sim->total_nodes || sim->gpus[j] < 0) {
            PyErr_Format(PyExc_ValueError, "job index %d: nodes must be in 1..total_nodes and gpus >= 0", j);
            return -1;
        }
        if (sim->gpn[j] < 1 || sim->gpn[j] > sim->node_gpus) {
            PyErr_Format(PyExc_ValueError, "job index %d: gpus_per_node must be in 1..%d", j, sim->node_gpus);
            return -1;
        }
    }
    return 0;
}

/* Set up the piece `kind` names in `mapping` ("plugin", then its settings). */
static int setup_piece(Sim *sim, const Kind *kind, PyObject *mapping, GpBuffers *buffers, Py_ssize_t n_jobs) {
    GpSettings s = {.mapping = mapping, .piece = kind->keyword, .n_jobs = n_jobs, .buffers = buffers};
    if (!PyMapping_Check(mapping)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a mapping of settings by name", kind->keyword);
        return -1;
    }
    int single = kind->plugins[0].name && !kind->plugins[1].name;
    PyObject *name_obj;
    if (gp_read_object(&s, "plugin", single, &name_obj) < 0) return -1;
    const char *name = name_obj == Py_None ? kind->plugins[0].name : PyUnicode_AsUTF8(name_obj);
    if (!name) return -1;
    const GpPlugin *plugin = NULL;
    for (const GpPlugin *p = kind->plugins; p->name; p++)
        if (strcmp(p->name, name) == 0) plugin = p;
    if (!plugin) {
        PyErr_Format(PyExc_ValueError, "%s: no plugin %s", kind->keyword, name);
        return -1;
    }
    s.piece = plugin->name;
    if (plugin->setup(sim, &s) < 0) return -1;
    return gp_settings_done(&s);
}

PyDoc_STRVAR(simulate_doc,
             "simulate(*, cluster, jobs, results, timeline, scheduler, select, priority=None, qos=None,\n"
             "         preempt=None, reservations=None, lending=None, topology=None, power=None)\n"
             "         -> (rows, ranges)\n"
             "--\n\n"
             "Run the batch engine. Every argument is a mapping read by name: cluster (nodes,\n"
             "gpus_per_node; cpus_per_node and mem_per_node_mb to count CPUs and memory), jobs\n"
             "(submit, run, estimate, nodes, gpus, job_id, gpus_per_node, submitted_early; with\n"
             "CPUs counted cpus_per_node, cpu_step, mem_per_node_mb), results (start, range_first,\n"
             "range_count; with CPUs counted held_by) and timeline (time_s, busy_gpus, queued_jobs;\n"
             "with CPUs counted busy_cpus, busy_mem_mb): arrays filled in; and one per\n"
             "piece: its \"plugin\" (a name from pieces()) and its settings. Returns the timeline rows and the\n"
             "(first node, count) pairs of the jobs' node ranges as bytes.");

static PyObject *simulate(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *keywords[] = {"cluster", "jobs", "results", "timeline", "scheduler", "select", "priority",
                               "qos", "preempt", "reservations", "lending", "topology", "power", NULL};
    PyObject *cluster = NULL, *jobs = NULL, *results = NULL, *timeline = NULL;
    PyObject *pieces[N_KINDS];
    for (int k = 0; k < N_KINDS; k++) pieces[k] = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOOOOOOOOOO", keywords, &cluster, &jobs, &results,
                                     &timeline, &pieces[0], &pieces[1], &pieces[2], &pieces[3], &pieces[4],
                                     &pieces[5], &pieces[6], &pieces[7], &pieces[8]))
        return NULL;
    if (!cluster || !jobs || !results || !timeline) {
        PyErr_SetString(PyExc_TypeError, "simulate: cluster, jobs, results and timeline are required");
        return NULL;
    }
    PyObject *result = NULL;
    GpBuffers *buffers = PyMem_Calloc(1, sizeof(GpBuffers));
    Sim sim;
    int sim_ready = 0;
    if (!buffers) return PyErr_NoMemory();

    int64_t total_nodes, node_gpus, node_cpus = 0, node_mem = 0;
    PyObject *cpus_obj;
    GpSettings c = {.mapping = cluster, .piece = "cluster", .buffers = buffers};
    if (gp_read_int(&c, "nodes", &total_nodes) < 0 || gp_read_int(&c, "gpus_per_node", &node_gpus) < 0 ||
        gp_read_object(&c, "cpus_per_node", 1, &cpus_obj) < 0)
        goto done;
    /* CPUs and memory are counted when the cluster gives its CPUs per node */
    int count_cpus = cpus_obj != Py_None;
    if (count_cpus) {
        node_cpus = PyLong_AsLongLong(cpus_obj);
        if ((node_cpus == -1 && PyErr_Occurred()) || gp_read_int(&c, "mem_per_node_mb", &node_mem) < 0) goto done;
    }
    if (gp_settings_done(&c) < 0) goto done;
    if (count_cpus && (node_cpus < 1 || node_cpus > INT32_MAX || node_mem < 0 || node_mem > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "cluster: need 1 <= cpus_per_node and 0 <= mem_per_node_mb < 2**31");
        goto done;
    }
    void *submit, *run, *estimate, *nodes, *gpus, *job_id, *gpn, *quiet, *job_cpus = NULL, *cpu_step = NULL,
                                                                          *job_mem = NULL, *held_by = NULL;
    void *start, *range_first, *range_count, *tl_time, *tl_busy, *tl_queued;
    Py_ssize_t n, tl_cap;
    GpSettings j = {.mapping = jobs, .piece = "jobs", .buffers = buffers};
    if (gp_read_array(&j, "submit", 8, -1, 0, 0, &submit, &n) < 0) goto done;
    j.n_jobs = n;
    if (gp_read_array(&j, "run", 8, n, 0, 0, &run, NULL) < 0 ||
        gp_read_array(&j, "estimate", 8, n, 0, 0, &estimate, NULL) < 0 ||
        gp_read_array(&j, "nodes", 4, n, 0, 0, &nodes, NULL) < 0 ||
        gp_read_array(&j, "gpus", 4, n, 0, 0, &gpus, NULL) < 0 ||
        gp_read_array(&j, "job_id", 8, n, 0, 0, &job_id, NULL) < 0 ||
        gp_read_array(&j, "gpus_per_node", 4, n, 0, 0, &gpn, NULL) < 0 ||
        gp_read_array(&j, "submitted_early", 1, n, 0, 1, &quiet, NULL) < 0)
        goto done;
    if (count_cpus && (gp_read_array(&j, "cpus_per_node", 4, n, 0, 0, &job_cpus, NULL) < 0 ||
                       gp_read_array(&j, "cpu_step", 4, n, 0, 0, &cpu_step, NULL) < 0 ||
                       gp_read_array(&j, "mem_per_node_mb", 4, n, 0, 0, &job_mem, NULL) < 0))
        goto done;
    if (gp_settings_done(&j) < 0) goto done;
    GpSettings r = {.mapping = results, .piece = "results", .buffers = buffers};
    if (gp_read_array(&r, "start", 8, n, 1, 0, &start, NULL) < 0 ||
        gp_read_array(&r, "range_first", 8, n, 1, 0, &range_first, NULL) < 0 ||
        gp_read_array(&r, "range_count", 4, n, 1, 0, &range_count, NULL) < 0 ||
        (count_cpus && gp_read_array(&r, "held_by", 1, n, 1, 0, &held_by, NULL) < 0) || gp_settings_done(&r) < 0)
        goto done;
    GpSettings t = {.mapping = timeline, .piece = "timeline", .buffers = buffers};
    if (gp_read_array(&t, "time_s", 8, -1, 1, 0, &tl_time, &tl_cap) < 0 ||
        gp_read_array(&t, "busy_gpus", 8, tl_cap, 1, 0, &tl_busy, NULL) < 0 ||
        gp_read_array(&t, "queued_jobs", 4, tl_cap, 1, 0, &tl_queued, NULL) < 0)
        goto done;
    void *tl_cpus = NULL, *tl_mem = NULL;
    if (count_cpus && (gp_read_array(&t, "busy_cpus", 8, tl_cap, 1, 0, &tl_cpus, NULL) < 0 ||
                       gp_read_array(&t, "busy_mem_mb", 8, tl_cap, 1, 0, &tl_mem, NULL) < 0))
        goto done;
    if (gp_settings_done(&t) < 0) goto done;
    if (total_nodes < 1 || total_nodes > INT32_MAX || node_gpus < 1 || node_gpus > 4096 || n > INT32_MAX - 1 ||
        total_nodes * node_gpus > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError,
                        "need total_nodes >= 1, 1..4096 GPUs per node, fewer than 2**30 GPUs and 2**31 jobs");
        goto done;
    }

    if (gp_sim_init(&sim, (int32_t)n, (int32_t)total_nodes, (int32_t)node_gpus) < 0) {
        gp_sim_free(&sim);
        PyErr_NoMemory();
        goto done;
    }
    sim_ready = 1;
    sim.submit = submit;
    sim.run = run;
    sim.attempt_run = run;
    sim.estimate = estimate;
    sim.nodes = nodes;
    sim.gpus = gpus;
    sim.job_id = job_id;
    sim.gpn = gpn;
    sim.quiet_arrival = quiet;
    sim.start = start;
    sim.range_first = range_first;
    sim.range_count = range_count;
    if (check_jobs(&sim) < 0) goto done;
    if (count_cpus) {
        const int32_t *cpus = job_cpus, *step = cpu_step, *mem = job_mem;
        for (Py_ssize_t k = 0; k < n; k++)
            if (cpus[k] < 1 || cpus[k] > node_cpus || step[k] < 1 || mem[k] < 0 || mem[k] > node_mem) {
                PyErr_Format(PyExc_ValueError,
                             "job index %zd: needs 1 <= cpus_per_node <= the node's, cpu_step >= 1 and "
                             "0 <= mem_per_node_mb <= the node's",
                             k);
                goto done;
            }
        if (gp_enable_cpus(&sim, (int32_t)node_cpus, (int32_t)node_mem, cpus, step, mem, held_by) < 0) {
            PyErr_NoMemory();
            goto done;
        }
        sim.tl_busy_cpus = tl_cpus;
        sim.tl_busy_mem = tl_mem;
    }
    sim.whole_nodes = 1;
    for (Py_ssize_t k = 0; k < n; k++)
        if (sim.gpn[k] != sim.node_gpus) sim.whole_nodes = 0;
    sim.whole_jobs = sim.whole_nodes;
    for (int k = 0; k < N_KINDS; k++) {
        if (pieces[k] == Py_None) {
            if (!KINDS[k].required) continue;
            PyErr_Format(PyExc_TypeError, "simulate: %s is required", KINDS[k].keyword);
            goto done;
        }
        if (setup_piece(&sim, &KINDS[k], pieces[k], buffers, n) < 0) goto done;
    }

    int64_t rows;
    Py_BEGIN_ALLOW_THREADS
    rows = gp_run(&sim, tl_time, tl_busy, tl_queued, tl_cap);
    Py_END_ALLOW_THREADS
    if (rows == -3) goto done; /* the hook's exception, or KeyboardInterrupt, is set */
    if (rows == -4) {
        PyErr_SetString(PyExc_RuntimeError, "timeline capacity too small");
        goto done;
    }
    if (rows == -2) {
        PyErr_SetString(PyExc_RuntimeError, "the scheduling pass started a job that did not fit");
        goto done;
    }
    if (rows < 0) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *ranges =
        PyBytes_FromStringAndSize((const char *)sim.ranges, (Py_ssize_t)(sim.ranges_len * 2 * sizeof(int32_t)));
    if (!ranges) goto done;
    result = Py_BuildValue("LN", (long long)rows, ranges);
done:
    if (sim_ready) gp_sim_free(&sim);
    for (int k = 0; k < buffers->count; k++) PyBuffer_Release(&buffers->views[k]);
    PyMem_Free(buffers);
    return result;
}

/* Arrays the hostlists helper takes: (name, view) */
typedef struct {
    Py_buffer view;
    const char *name;
} Arg;

static int check_len(Arg *arg, Py_ssize_t n, Py_ssize_t itemsize) {
    if (arg->view.len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes, got %zd bytes", arg->name, n, itemsize,
                     arg->view.len);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(hostlists_doc,
             "hostlists(prefix, ranges, range_first, range_count) -> (offsets, data)\n"
             "--\n\n"
             "Slurm-style host lists (\"gpu[0-15,32]\", \"gpu7\", or \"\" for no node) for each job,\n"
             "as the int64 offsets and UTF-8 bytes of an Arrow large_string array.");

static PyObject *hostlists(PyObject *self, PyObject *args) {
    (void)self;
    const char *prefix;
    Arg a[3] = {{.name = "ranges"}, {.name = "range_first"}, {.name = "range_count"}};
    if (!PyArg_ParseTuple(args, "sy*y*y*", &prefix, &a[0].view, &a[1].view, &a[2].view))
        return NULL;
    PyObject *result = NULL;
    char *data = NULL;
    Py_ssize_t n = a[1].view.len / 8, n_ranges = a[0].view.len / 8;
    PyObject *offsets = NULL;
    if (check_len(&a[2], n, 4) < 0) goto done;
    const int32_t *ranges = a[0].view.buf, *count = a[2].view.buf;
    const int64_t *first = a[1].view.buf;
    size_t prefix_len = strlen(prefix), cap = 64, len = 0;
    data = PyMem_Malloc(cap);
    offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 8);
    if (!data || !offsets) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *off = (int64_t *)PyBytes_AS_STRING(offsets);
    off[0] = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (count[j] > 0 && (first[j] < 0 || first[j] + count[j] > n_ranges)) {
            PyErr_Format(PyExc_ValueError, "job %zd: ranges out of bounds", j);
            goto done;
        }
        /* worst case: prefix, brackets, and per range two 10-digit numbers, '-' and ',' */
        size_t need = len + prefix_len + 2 + (size_t)count[j] * 24;
        if (need > cap) {
            while (cap < need) cap *= 2;
            char *grown = PyMem_Realloc(data, cap);
            if (!grown) {
                PyErr_NoMemory();
                goto done;
            }
            data = grown;
        }
        if (count[j] > 0) {
            const int32_t *r = ranges + 2 * first[j];
            memcpy(data + len, prefix, prefix_len);
            len += prefix_len;
            int bracket = count[j] > 1 || r[1] > 1;
            if (bracket) data[len++] = '[';
            for (int32_t k = 0; k < count[j]; k++) {
                if (k) data[len++] = ',';
                if (r[2 * k + 1] == 1)
                    len += (size_t)sprintf(data + len, "%d", r[2 * k]);
                else
                    len += (size_t)sprintf(data + len, "%d-%d", r[2 * k], r[2 * k] + r[2 * k + 1] - 1);
            }
            if (bracket) data[len++] = ']';
        }
        off[j + 1] = (int64_t)len;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
    if (bytes) result = Py_BuildValue("ON", offsets, bytes);
done:
    Py_XDECREF(offsets);
    PyMem_Free(data);
    for (int k = 0; k < 3; k++)
        if (a[k].view.obj) PyBuffer_Release(&a[k].view);
    return result;
}

static PyObject *pieces(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *by_kind = PyDict_New();
    if (!by_kind) return NULL;
    for (int k = 0; k < N_KINDS; k++) {
        PyObject *names = PyList_New(0);
        if (!names || PyDict_SetItemString(by_kind, KINDS[k].keyword, names) < 0) {
            Py_XDECREF(names);
            Py_DECREF(by_kind);
            return NULL;
        }
        Py_DECREF(names); /* the dict holds it */
        for (const GpPlugin *p = KINDS[k].plugins; p->name; p++) {
            PyObject *name = PyUnicode_FromString(p->name);
            if (!name || PyList_Append(names, name) < 0) {
                Py_XDECREF(name);
                Py_DECREF(by_kind);
                return NULL;
            }
            Py_DECREF(name);
        }
    }
    return by_kind;
}

PyDoc_STRVAR(checkpointed_doc,
             "checkpointed(executed_s, interval_s) -> float\n"
             "--\n\n"
             "Of executed_s seconds an evicted job ran, the work its checkpoints kept (whole\n"
             "intervals; interval_s <= 0 or NaN: none): the engine's rule, for models outside it.");

static PyObject *checkpointed(PyObject *self, PyObject *args) {
    (void)self;
    double executed_s, interval_s;
    if (!PyArg_ParseTuple(args, "dd", &executed_s, &interval_s)) return NULL;
    return PyFloat_FromDouble(gp_checkpointed(executed_s, interval_s));
}

PyDoc_STRVAR(check_signals_doc,
             "check_signals(now=None, /) -> None\n"
             "--\n\n"
             "Run the handlers of signals received (Ctrl-C raises KeyboardInterrupt): compiled code\n"
             "(the Kubernetes model, built by mypyc) never passes between bytecodes, where Python\n"
             "runs them, so its event loop calls this every instant, with its simulated time `now`\n"
             "(written to the progress clock, when one is set).");

static PyObject *check_signals(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "check_signals takes at most one argument");
        return NULL;
    }
    if (nargs == 1 && gp_progress_clock) {
        double now = PyFloat_AsDouble(args[0]);
        if (now == -1.0 && PyErr_Occurred()) return NULL;
        *gp_progress_clock = now;
    }
    if (PyErr_CheckSignals() < 0) return NULL;
    Py_RETURN_NONE;
}

/* the buffer gp_progress_clock points into, held while it does */
static Py_buffer progress_buffer;
static int progress_held = 0;

PyDoc_STRVAR(progress_clock_doc,
             "progress_clock(clock, /) -> None\n"
             "--\n\n"
             "Where the engine writes its simulated time as it runs (every few thousand instants, and\n"
             "at each check_signals(now)): a writable buffer of one float64, such as a slot of a\n"
             "multiprocessing RawArray the command that started the run reads; None: nowhere.");

static PyObject *progress_clock(PyObject *self, PyObject *clock) {
    (void)self;
    if (progress_held) {
        gp_progress_clock = NULL;
        PyBuffer_Release(&progress_buffer);
        progress_held = 0;
    }
    if (clock == Py_None) Py_RETURN_NONE;
    if (PyObject_GetBuffer(clock, &progress_buffer, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (progress_buffer.len != (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(&progress_buffer);
        PyErr_SetString(PyExc_ValueError, "progress_clock: a writable buffer of one float64");
        return NULL;
    }
    progress_held = 1;
    gp_progress_clock = (double *)progress_buffer.buf;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fair_tree_doc,
             "fair_tree(accounts, shares, half_life_s, reset_period, epoch_s, times, accrued) -> bytes\n"
             "--\n\n"
             "The engine's Fair Tree (slurm/_core/fairshare.c) at each of `times` (float64), given each\n"
             "user association's usage since the last (`accrued`: float64, len(times) x associations):\n"
             "the factors, float64, one row per time. For the tests that compare it with fairshare.py.");

static PyObject *fair_tree(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer accounts, shares, times, accrued;
    double half_life_s, epoch_s;
    int reset_period;
    if (!PyArg_ParseTuple(args, "y*y*didy*y*", &accounts, &shares, &half_life_s, &reset_period, &epoch_s, &times,
                          &accrued))
        return NULL;
    Py_ssize_t users = accounts.len / 4, n_accounts = shares.len / 8, calls = times.len / 8;
    PyObject *out = NULL;
    GpFairTree *tree = NULL;
    if (users < 1 || n_accounts < 1 || accrued.len != calls * users * 8 || reset_period < GP_RESET_NONE ||
        reset_period > GP_RESET_YEARLY ||
        gp_check_indices(accounts.buf, users, n_accounts, "fair_tree: association %zd has no account") < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "fair_tree: bad arguments");
    } else if (!(tree = gp_fair_tree_new((int32_t)users, accounts.buf, (int32_t)n_accounts, shares.buf, half_life_s,
                                         reset_period, epoch_s))) {
        PyErr_NoMemory();
    } else if ((out = PyBytes_FromStringAndSize(NULL, calls * users * 8))) {
        double *factors = (double *)PyBytes_AS_STRING(out);
        for (Py_ssize_t c = 0; c < calls; c++)
            gp_fair_tree_factors(tree, ((const double *)times.buf)[c], (const double *)accrued.buf + c * users,
                                 factors + c * users);
    }
    gp_fair_tree_free(tree);
    PyBuffer_Release(&accounts);
    PyBuffer_Release(&shares);
    PyBuffer_Release(&times);
    PyBuffer_Release(&accrued);
    return out;
}

static PyMethodDef methods[] = {
    {"fair_tree", fair_tree, METH_VARARGS, fair_tree_doc},
    {"check_signals", (PyCFunction)(void (*)(void))check_signals, METH_FASTCALL, check_signals_doc},
    {"progress_clock", progress_clock, METH_O, progress_clock_doc},
    {"simulate", (PyCFunction)(void (*)(void))simulate, METH_VARARGS | METH_KEYWORDS, simulate_doc},
    {"hostlists", hostlists, METH_VARARGS, hostlists_doc},
    {"checkpointed", checkpointed, METH_VARARGS, checkpointed_doc},
    {"pieces", pieces, METH_NOARGS,
     "pieces() -> {kind: [plugin names]}: the compiled pieces by kind (the keywords of simulate)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batchcore", "Compiled discrete-event batch engine of gpuplan.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__batchcore(void) {
    PyObject *created = PyModule_Create(&module);
    if (created && gp_kube_add_types(created) < 0) Py_CLEAR(created);
    return created;
}
