/*
 * kube-scheduler's choice of a node for one pod, over the node arrays of
 * sim/kubernetes/cluster.py (Nodes), and the bookkeeping of binding a pod and deleting it.
 *
 * Filter (NodeResourcesFit, with the node selector and TaintToleration as ranges of nodes: a pool's
 * nodes are numbered together) and Score (NodeResourcesFit's scoringStrategy.type, each strategy a
 * piece registered by its KubeSchedulerConfiguration name in STRATEGIES). Per resource of
 * scoringStrategy.resources the plugin's integer formula (pkg/scheduler/framework/plugins/
 * noderesources): least_allocated.go leastResourceScorer, most_allocated.go mostResourceScorer,
 * requested_to_capacity_ratio.go with helper.BuildBrokenLinearFunction. The node's score is the
 * weighted mean over the resources it has (allocatable > 0; a resource of unknown capacity has 0),
 * truncated; RequestedToCapacityRatio weighs only the resources scoring above 0 and rounds half
 * away from zero (math.Round). The pod goes to the first node of the best score (kube-scheduler's
 * selectHost picks at random among the best; the lowest-numbered keeps runs reproducible).
 *
 * The arrays stay NumPy arrays owned by Nodes (the Python side reads them: preemption, TAS, the
 * autoscaler); a NodeState holds their buffers for as long as it lives.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>

#include "kube.h"

#define MILLI 1000              /* thousandths of a GPU */
#define MAX_NODE_SCORE 100      /* framework.MaxNodeScore */
#define MAX_UTILIZATION 100     /* a resource's utilisation is scored in percent */
#define MAX_CUSTOM_SCORE 10     /* a shape point's highest score (config.MaxCustomPriorityScore) */
#define MAX_GPUS_PER_NODE 63    /* GPUs of a node are the bits of a mask */

/* ---- scoring strategies -------------------------------------------------------------------- */

typedef struct Scorer Scorer;
/* One resource's score on a node whose allocatable is `alloc` (> 0) with `used` requested,
 * the pod included. */
typedef int64_t (*ResourceScore)(const Scorer *scorer, int64_t alloc, int64_t used);

typedef struct {
    const char *name; /* scoringStrategy.type */
    ResourceScore score;
    int positive_only; /* the mean weighs only resources scoring above 0, rounded */
} Strategy;

struct Scorer {
    PyObject_HEAD const Strategy *strategy;
    int64_t cpu_weight, memory_weight, gpu_weight;
    Py_ssize_t points;    /* the shape's points (RequestedToCapacityRatio) */
    int64_t *utilization; /* increasing */
    int64_t *shape_score; /* x MAX_NODE_SCORE / MAX_CUSTOM_SCORE */
};

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* least_allocated.go: (allocatable - requested) x 100 / allocatable; 0 past the allocatable. */
static int64_t least_allocated(const Scorer *scorer, int64_t alloc, int64_t used) {
    (void)scorer;
    return used > alloc ? 0 : floor_div((alloc - used) * MAX_NODE_SCORE, alloc);
}

/* most_allocated.go: requested x 100 / allocatable; 100 past the allocatable. */
static int64_t most_allocated(const Scorer *scorer, int64_t alloc, int64_t used) {
    (void)scorer;
    return floor_div((used < alloc ? used : alloc) * MAX_NODE_SCORE, alloc);
}

/* requested_to_capacity_ratio.go: the broken line through the shape at the utilisation in percent
 * (integers; Go's division truncates towards zero), the first point's score before it and the
 * last's after it. */
static int64_t requested_to_capacity_ratio(const Scorer *s, int64_t alloc, int64_t used) {
    int64_t u = used >= alloc ? MAX_UTILIZATION : floor_div((used > 0 ? used : 0) * MAX_UTILIZATION, alloc);
    Py_ssize_t upper = 0; /* the first point at or past u */
    while (upper < s->points && s->utilization[upper] < u) upper++;
    if (upper == 0) return s->shape_score[0];
    if (upper >= s->points) return s->shape_score[s->points - 1];
    Py_ssize_t lower = upper - 1;
    int64_t rise = (s->shape_score[upper] - s->shape_score[lower]) * (u - s->utilization[lower]);
    int64_t run = s->utilization[upper] - s->utilization[lower];
    if (run < 1) run = 1;
    int64_t step = rise >= 0 ? rise / run : -((-rise) / run);
    return s->shape_score[lower] + step;
}

static const Strategy STRATEGIES[] = {
    {"LeastAllocated", least_allocated, 0},
    {"MostAllocated", most_allocated, 0},
    {"RequestedToCapacityRatio", requested_to_capacity_ratio, 1},
    {NULL, NULL, 0},
};

static void scorer_dealloc(Scorer *self) {
    PyMem_Free(self->utilization);
    PyMem_Free(self->shape_score);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scorer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"strategy", "cpu_weight", "memory_weight", "gpu_weight", "shape", NULL};
    const char *name;
    long long cpu_weight, memory_weight, gpu_weight;
    PyObject *shape;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sLLLO", keywords, &name, &cpu_weight, &memory_weight,
                                     &gpu_weight, &shape))
        return NULL;
    const Strategy *strategy = NULL;
    for (const Strategy *s = STRATEGIES; s->name; s++)
        if (strcmp(s->name, name) == 0) strategy = s;
    if (!strategy) return PyErr_Format(PyExc_ValueError, "scoringStrategy.type: no strategy %s", name);
    if (cpu_weight < 0 || memory_weight < 0 || gpu_weight < 0)
        return PyErr_Format(PyExc_ValueError, "scoringStrategy.resources: weights must be >= 0");
    PyObject *points = PySequence_Fast(shape, "shape: a sequence of (utilization, score) pairs");
    if (!points) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(points);
    if (strategy->score == requested_to_capacity_ratio && n == 0) {
        Py_DECREF(points);
        return PyErr_Format(PyExc_ValueError, "requestedToCapacityRatio.shape: at least one point");
    }
    Scorer *self = (Scorer *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(points);
        return NULL;
    }
    self->strategy = strategy;
    self->cpu_weight = cpu_weight;
    self->memory_weight = memory_weight;
    self->gpu_weight = gpu_weight;
    self->points = n;
    self->utilization = PyMem_Calloc(n ? n : 1, sizeof(int64_t));
    self->shape_score = PyMem_Calloc(n ? n : 1, sizeof(int64_t));
    if (!self->utilization || !self->shape_score) {
        Py_DECREF(points);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long utilization, score;
        PyObject *point = PySequence_Fast_GET_ITEM(points, i);
        if (!PyArg_ParseTuple(point, "LL", &utilization, &score)) {
            Py_DECREF(points);
            Py_DECREF(self);
            return NULL;
        }
        if (i > 0 && utilization <= self->utilization[i - 1]) {
            Py_DECREF(points);
            Py_DECREF(self);
            return PyErr_Format(PyExc_ValueError, "requestedToCapacityRatio.shape: utilization must increase");
        }
        self->utilization[i] = utilization;
        self->shape_score[i] = score * (MAX_NODE_SCORE / MAX_CUSTOM_SCORE);
    }
    Py_DECREF(points);
    return (PyObject *)self;
}

static PyTypeObject ScorerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpuplan.sim.engine._batchcore.Scorer",
    .tp_basicsize = sizeof(Scorer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scorer(strategy, cpu_weight, memory_weight, gpu_weight, shape): NodeResourcesFit's score",
    .tp_new = scorer_new,
    .tp_dealloc = (destructor)scorer_dealloc,
};

/* ---- node state ---------------------------------------------------------------------------- */

enum {
    UP,
    CPU_FREE,
    MEM_FREE,
    WHOLE_FREE,
    BEST_FREE,
    GPU_FREE,
    GPU_FREE_TOTAL,
    PODS_ON,
    BATCH_PODS_ON,
    CPU_ALLOC,
    MEM_ALLOC,
    GPUS,
    N_ARRAYS
};

/* The attributes of Nodes the state reads, with their item sizes. */
static const struct {
    const char *name;
    Py_ssize_t itemsize;
} ARRAYS[N_ARRAYS] = {
    {"up", 1},         {"cpu_free", 8}, {"mem_free", 8},  {"whole_free", 4},    {"best_free", 4}, {"gpu_free", 4},
    {"gpu_free_total", 8}, {"pods_on", 4}, {"batch_pods_on", 4}, {"cpu_alloc", 8}, {"mem_alloc", 8}, {"gpus", 4},
};

typedef struct {
    PyObject_HEAD Py_buffer views[N_ARRAYS];
    int held; /* views acquired */
    Py_ssize_t count;
    Py_ssize_t max_gpus; /* gpu_free's columns */
    const uint8_t *up;
    int64_t *cpu_free, *mem_free, *gpu_free_total;
    int32_t *whole_free, *best_free, *gpu_free, *pods_on, *batch_pods_on;
    const int64_t *cpu_alloc, *mem_alloc;
    const int32_t *gpus;
    /* The nodes whose free room grew (a pod left, the node became Ready), in two epochs: this one
     * (since the last new_epoch) and the one before. A pod that fitted no node at some moment of
     * these epochs can only fit on these nodes: every other node has only lost room since. */
    uint8_t *gained;              /* per node: GAINED_NOW | GAINED_BEFORE */
    Py_ssize_t *gained_now, *gained_before; /* the nodes of each epoch, in the order they gained */
    Py_ssize_t now_count, before_count;
} NodeState;

enum { GAINED_NOW = 1, GAINED_BEFORE = 2 };

static void state_dealloc(NodeState *self) {
    for (int i = 0; i < self->held; i++) PyBuffer_Release(&self->views[i]);
    PyMem_Free(self->gained);
    PyMem_Free(self->gained_now);
    PyMem_Free(self->gained_before);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *state_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"nodes", NULL};
    PyObject *nodes;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", keywords, &nodes)) return NULL;
    NodeState *self = (NodeState *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    void *data[N_ARRAYS];
    for (int i = 0; i < N_ARRAYS; i++) {
        PyObject *array = PyObject_GetAttrString(nodes, ARRAYS[i].name);
        if (!array) goto fail;
        int got = PyObject_GetBuffer(array, &self->views[i], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT);
        Py_DECREF(array);
        if (got < 0) goto fail;
        self->held++;
        Py_buffer *view = &self->views[i];
        Py_ssize_t rows = view->ndim ? view->shape[0] : 0;
        if (view->itemsize != ARRAYS[i].itemsize || view->ndim != (i == GPU_FREE ? 2 : 1) ||
            (i > 0 && rows != self->count)) {
            PyErr_Format(PyExc_ValueError, "Nodes.%s: expected %s of %zd-byte items, one row per node",
                         ARRAYS[i].name, i == GPU_FREE ? "a matrix" : "an array", ARRAYS[i].itemsize);
            goto fail;
        }
        if (i == 0) self->count = rows;
        data[i] = view->buf;
    }
    self->max_gpus = self->views[GPU_FREE].shape[1];
    if (self->max_gpus > MAX_GPUS_PER_NODE) {
        PyErr_Format(PyExc_ValueError, "Nodes: at most %d GPUs per node", MAX_GPUS_PER_NODE);
        goto fail;
    }
    self->up = data[UP];
    self->cpu_free = data[CPU_FREE];
    self->mem_free = data[MEM_FREE];
    self->whole_free = data[WHOLE_FREE];
    self->best_free = data[BEST_FREE];
    self->gpu_free = data[GPU_FREE];
    self->gpu_free_total = data[GPU_FREE_TOTAL];
    self->pods_on = data[PODS_ON];
    self->batch_pods_on = data[BATCH_PODS_ON];
    self->cpu_alloc = data[CPU_ALLOC];
    self->mem_alloc = data[MEM_ALLOC];
    self->gpus = data[GPUS];
    Py_ssize_t slots = self->count ? self->count : 1;
    self->gained = PyMem_Calloc((size_t)slots, 1);
    self->gained_now = PyMem_Calloc((size_t)slots, sizeof(Py_ssize_t));
    self->gained_before = PyMem_Calloc((size_t)slots, sizeof(Py_ssize_t));
    if (!self->gained || !self->gained_now || !self->gained_before) {
        PyErr_NoMemory();
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

typedef struct {
    int64_t gpus, milli, cpu, mem;
} Pod;

static int64_t gpu_milli_total(const Pod *pod) { return pod->milli >= MILLI ? pod->gpus * pod->milli : pod->milli; }

/* NodeResourcesFit's Filter: Ready, with room for the pod's CPU, memory and GPUs (whole free GPUs,
 * or one GPU with the share free). */
static inline int fits(const NodeState *s, Py_ssize_t n, const Pod *pod) {
    if (!s->up[n] || s->cpu_free[n] < pod->cpu || s->mem_free[n] < pod->mem) return 0;
    if (pod->milli >= MILLI) return s->whole_free[n] >= pod->gpus;
    return pod->milli <= 0 || s->best_free[n] >= pod->milli;
}

static inline void add_resource(const Scorer *scorer, int64_t weight, int64_t alloc, int64_t used, int64_t *total,
                                int64_t *weights) {
    if (!weight || alloc <= 0) return; /* a resource the node does not have (or of unknown capacity) */
    int64_t score = scorer->strategy->score(scorer, alloc, used);
    *total += weight * score;
    if (!scorer->strategy->positive_only || score > 0) *weights += weight;
}

static int64_t node_score(const NodeState *s, const Scorer *scorer, Py_ssize_t n, const Pod *pod) {
    int64_t total = 0, weights = 0;
    add_resource(scorer, scorer->cpu_weight, s->cpu_alloc[n], s->cpu_alloc[n] - s->cpu_free[n] + pod->cpu, &total,
                 &weights);
    add_resource(scorer, scorer->memory_weight, s->mem_alloc[n], s->mem_alloc[n] - s->mem_free[n] + pod->mem,
                 &total, &weights);
    int64_t gpu_alloc = (int64_t)s->gpus[n] * MILLI;
    add_resource(scorer, scorer->gpu_weight, gpu_alloc, gpu_alloc - s->gpu_free_total[n] + gpu_milli_total(pod),
                 &total, &weights);
    if (weights <= 0) return 0;
    if (scorer->strategy->positive_only) { /* math.Round of the float64 mean: half away from zero */
        double mean = (double)total / (double)weights;
        double whole = floor(mean);
        return (int64_t)whole + (mean - whole >= 0.5);
    }
    return floor_div(total, weights);
}

static int read_pod(PyObject *const *args, Pod *pod) {
    int64_t *fields[] = {&pod->gpus, &pod->milli, &pod->cpu, &pod->mem};
    for (int i = 0; i < 4; i++) {
        *fields[i] = PyLong_AsLongLong(args[i]);
        if (*fields[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static int check_node(const NodeState *s, Py_ssize_t node) {
    if (node < 0 || node >= s->count) {
        PyErr_Format(PyExc_IndexError, "node %zd: not in 0..%zd", node, s->count - 1);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(select_doc, "select(scorer, gpus, milli, cpu, mem, ranges) -> node or -1\n--\n\n"
                         "The node kube-scheduler binds the pod to among the nodes of ranges, a flat tuple\n"
                         "(start, stop, start, stop, ...) of node numbers, in order.");

/* A flat tuple (start, stop, start, stop, ...) of node numbers, checked, into bounds[]. */
enum { MAX_RANGES = 1024 }; /* pairs: far more than pools a pod may use */

static Py_ssize_t read_ranges(const NodeState *s, PyObject *ranges, Py_ssize_t *bounds) {
    Py_ssize_t size = PyTuple_GET_SIZE(ranges);
    if (size > 2 * MAX_RANGES) {
        PyErr_Format(PyExc_ValueError, "at most %d ranges of nodes", MAX_RANGES);
        return -1;
    }
    for (Py_ssize_t r = 0; r < size; r += 2) {
        Py_ssize_t start = PyLong_AsSsize_t(PyTuple_GET_ITEM(ranges, r));
        Py_ssize_t stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(ranges, r + 1));
        if ((start == -1 || stop == -1) && PyErr_Occurred()) return -1;
        if (start < 0 || stop > s->count || start > stop) {
            PyErr_Format(PyExc_IndexError, "range %zd:%zd not within the %zd nodes", start, stop, s->count);
            return -1;
        }
        bounds[r] = start;
        bounds[r + 1] = stop;
    }
    return size;
}

static int read_select_args(const NodeState *s, PyObject *const *args, Py_ssize_t nargs, const char *usage,
                            Pod *pod, Py_ssize_t *bounds, Py_ssize_t *size) {
    if (nargs != 6 || !PyObject_TypeCheck(args[0], &ScorerType) || !PyTuple_Check(args[5]) ||
        PyTuple_GET_SIZE(args[5]) % 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (read_pod(args + 1, pod) < 0) return -1;
    *size = read_ranges(s, args[5], bounds);
    return *size < 0 ? -1 : 0;
}

static PyObject *state_select(NodeState *self, PyObject *const *args, Py_ssize_t nargs) {
    Pod pod;
    Py_ssize_t bounds[2 * MAX_RANGES], size;
    if (read_select_args(self, args, nargs, "select(scorer, gpus, milli, cpu, mem, ranges: tuple of start, stop)",
                         &pod, bounds, &size) < 0)
        return NULL;
    const Scorer *scorer = (const Scorer *)args[0];
    Py_ssize_t best = -1;
    int64_t best_score = 0;
    for (Py_ssize_t r = 0; r < size; r += 2)
        for (Py_ssize_t n = bounds[r]; n < bounds[r + 1]; n++) {
            if (!fits(self, n, &pod)) continue;
            int64_t score = node_score(self, scorer, n, &pod);
            if (best < 0 || score > best_score) {
                best = n;
                best_score = score;
            }
        }
    return PyLong_FromSsize_t(best);
}

static void gain(NodeState *s, Py_ssize_t node) {
    if (s->gained[node] & GAINED_NOW) return;
    s->gained[node] |= GAINED_NOW;
    s->gained_now[s->now_count++] = node;
}

static int in_ranges(Py_ssize_t node, const Py_ssize_t *bounds, Py_ssize_t size) {
    for (Py_ssize_t r = 0; r < size; r += 2)
        if (bounds[r] <= node && node < bounds[r + 1]) return 1;
    return 0;
}

PyDoc_STRVAR(select_gained_doc,
             "select_gained(scorer, gpus, milli, cpu, mem, ranges) -> node or -1\n--\n\n"
             "select(...) for a pod that fitted no node at some moment since the epoch before this one\n"
             "began: only the nodes that gained room since are looked at, the same choice.");

static PyObject *state_select_gained(NodeState *self, PyObject *const *args, Py_ssize_t nargs) {
    Pod pod;
    Py_ssize_t bounds[2 * MAX_RANGES], size;
    if (read_select_args(self, args, nargs,
                         "select_gained(scorer, gpus, milli, cpu, mem, ranges: tuple of start, stop)", &pod, bounds,
                         &size) < 0)
        return NULL;
    const Scorer *scorer = (const Scorer *)args[0];
    Py_ssize_t best = -1;
    int64_t best_score = 0;
    for (int epoch = 0; epoch < 2; epoch++) {
        const Py_ssize_t *list = epoch ? self->gained_now : self->gained_before;
        Py_ssize_t count = epoch ? self->now_count : self->before_count;
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_ssize_t n = list[i];
            if (epoch && self->gained[n] & GAINED_BEFORE) continue; /* seen in the first list */
            if (!in_ranges(n, bounds, size) || !fits(self, n, &pod)) continue;
            int64_t score = node_score(self, scorer, n, &pod);
            /* select's order: the best score, then the lowest-numbered node */
            if (best < 0 || score > best_score || (score == best_score && n < best)) {
                best = n;
                best_score = score;
            }
        }
    }
    return PyLong_FromSsize_t(best);
}

PyDoc_STRVAR(new_epoch_doc, "new_epoch()\n--\n\n"
                            "Forget the nodes that gained room before the epoch now ending; a new one begins.");

static PyObject *state_new_epoch(NodeState *self, PyObject *unused) {
    (void)unused;
    for (Py_ssize_t i = 0; i < self->before_count; i++) self->gained[self->gained_before[i]] = 0;
    for (Py_ssize_t i = 0; i < self->now_count; i++) self->gained[self->gained_now[i]] = GAINED_BEFORE;
    Py_ssize_t *list = self->gained_before;
    self->gained_before = self->gained_now;
    self->before_count = self->now_count;
    self->gained_now = list;
    self->now_count = 0;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(gained_doc, "gained(node)\n--\n\nThe node gained room outside give_back (it became Ready).");

static PyObject *state_gained(NodeState *self, PyObject *arg) {
    Py_ssize_t node = PyLong_AsSsize_t(arg);
    if ((node == -1 && PyErr_Occurred()) || check_node(self, node) < 0) return NULL;
    gain(self, node);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(scores_doc, "scores(scorer, gpus, milli, cpu, mem, candidates) -> [score]\n--\n\n"
                         "NodeResourcesFit's score of each candidate node for the pod.");

static PyObject *state_scores(NodeState *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyObject_TypeCheck(args[0], &ScorerType)) {
        PyErr_SetString(PyExc_TypeError, "scores(scorer, gpus, milli, cpu, mem, candidates)");
        return NULL;
    }
    Pod pod;
    if (read_pod(args + 1, &pod) < 0) return NULL;
    PyObject *candidates = PySequence_Fast(args[5], "candidates: a sequence of node numbers");
    if (!candidates) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(candidates);
    PyObject *scores = PyList_New(count);
    for (Py_ssize_t i = 0; scores && i < count; i++) {
        Py_ssize_t node = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(candidates, i), PyExc_IndexError);
        PyObject *score = NULL;
        if (!(node == -1 && PyErr_Occurred()) && check_node(self, node) == 0)
            score = PyLong_FromLongLong(node_score(self, (const Scorer *)args[0], node, &pod));
        if (!score) Py_CLEAR(scores);
        else PyList_SET_ITEM(scores, i, score);
    }
    Py_DECREF(candidates);
    return scores;
}

/* A node's GPU summaries after its row changed. */
static void refresh(NodeState *s, Py_ssize_t node) {
    const int32_t *row = s->gpu_free + node * s->max_gpus;
    int32_t whole = 0, best = 0;
    int64_t total = 0;
    for (Py_ssize_t g = 0; g < s->max_gpus; g++) {
        whole += row[g] == MILLI;
        if (row[g] > best) best = row[g];
        if (row[g] > 0) total += row[g];
    }
    s->whole_free[node] = whole;
    s->best_free[node] = best;
    s->gpu_free_total[node] = total;
}

static int read_node_args(const NodeState *s, PyObject *const *args, Py_ssize_t nargs, const char *usage,
                          Py_ssize_t *node, int64_t *second, Pod *pod, int *batch) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    *node = PyLong_AsSsize_t(args[0]);
    *second = PyLong_AsLongLong(args[1]);
    pod->milli = PyLong_AsLongLong(args[2]);
    pod->cpu = PyLong_AsLongLong(args[3]);
    pod->mem = PyLong_AsLongLong(args[4]);
    *batch = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred() || *batch < 0) return -1;
    return check_node(s, *node);
}

PyDoc_STRVAR(take_doc, "take(node, gpus, milli, cpu, mem, batch) -> mask\n--\n\n"
                       "Bind a pod to node: gpus whole GPUs (the lowest-numbered free ones) or, when milli\n"
                       "< 1000, that share of the GPU with the least room that holds it (gpushare's binpack).\n"
                       "Returns the bitmask of the GPUs taken.");

static PyObject *state_take(NodeState *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t node;
    Pod pod;
    int batch;
    if (read_node_args(self, args, nargs, "take(node, gpus, milli, cpu, mem, batch)", &node, &pod.gpus, &pod,
                       &batch) < 0)
        return NULL;
    int32_t *row = self->gpu_free + node * self->max_gpus;
    uint64_t mask = 0;
    if (pod.milli >= MILLI) {
        int64_t taken = 0;
        for (Py_ssize_t g = 0; g < self->max_gpus && taken < pod.gpus; g++)
            if (row[g] == MILLI) {
                row[g] = 0;
                mask |= (uint64_t)1 << g;
                taken++;
            }
        if (taken < pod.gpus) return PyErr_Format(PyExc_ValueError, "node %zd: fewer than %lld free GPUs", node,
                                                  (long long)pod.gpus);
    } else if (pod.milli > 0) {
        Py_ssize_t chosen = -1;
        for (Py_ssize_t g = 0; g < self->max_gpus; g++)
            if (row[g] >= pod.milli && (chosen < 0 || row[g] < row[chosen])) chosen = g;
        if (chosen < 0) return PyErr_Format(PyExc_ValueError, "node %zd: no GPU with %lld free", node,
                                            (long long)pod.milli);
        row[chosen] -= (int32_t)pod.milli;
        mask = (uint64_t)1 << chosen;
    }
    refresh(self, node);
    self->cpu_free[node] -= pod.cpu;
    self->mem_free[node] -= pod.mem;
    self->pods_on[node] += 1;
    self->batch_pods_on[node] += batch;
    return PyLong_FromUnsignedLongLong(mask);
}

PyDoc_STRVAR(give_back_doc, "give_back(node, mask, milli, cpu, mem, batch)\n--\n\n"
                            "A pod bound by take(...) -> mask leaves node.");

static PyObject *state_give_back(NodeState *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t node;
    int64_t mask;
    Pod pod;
    int batch;
    if (read_node_args(self, args, nargs, "give_back(node, mask, milli, cpu, mem, batch)", &node, &mask, &pod,
                       &batch) < 0)
        return NULL;
    int32_t *row = self->gpu_free + node * self->max_gpus;
    int32_t share = pod.milli < MILLI ? (int32_t)pod.milli : MILLI;
    for (Py_ssize_t g = 0; g < self->max_gpus; g++)
        if ((uint64_t)mask >> g & 1) row[g] += share;
    refresh(self, node);
    self->cpu_free[node] += pod.cpu;
    self->mem_free[node] += pod.mem;
    self->pods_on[node] -= 1;
    self->batch_pods_on[node] -= batch;
    gain(self, node);
    Py_RETURN_NONE;
}

static PyMethodDef state_methods[] = {
    {"select", (PyCFunction)(void (*)(void))state_select, METH_FASTCALL, select_doc},
    {"scores", (PyCFunction)(void (*)(void))state_scores, METH_FASTCALL, scores_doc},
    {"take", (PyCFunction)(void (*)(void))state_take, METH_FASTCALL, take_doc},
    {"give_back", (PyCFunction)(void (*)(void))state_give_back, METH_FASTCALL, give_back_doc},
    {"select_gained", (PyCFunction)(void (*)(void))state_select_gained, METH_FASTCALL, select_gained_doc},
    {"new_epoch", (PyCFunction)state_new_epoch, METH_NOARGS, new_epoch_doc},
    {"gained", (PyCFunction)state_gained, METH_O, gained_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NodeStateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gpuplan.sim.engine._batchcore.NodeState",
    .tp_basicsize = sizeof(NodeState),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "NodeState(nodes): kube-scheduler's node choice and binding over a Nodes' arrays",
    .tp_new = state_new,
    .tp_dealloc = (destructor)state_dealloc,
    .tp_methods = state_methods,
};

static PyObject *scoring_strategies(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *names = PyList_New(0);
    for (const Strategy *s = STRATEGIES; names && s->name; s++) {
        PyObject *name = PyUnicode_FromString(s->name);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(names);
        Py_XDECREF(name);
    }
    return names;
}

static PyMethodDef functions[] = {
    {"scoring_strategies", scoring_strategies, METH_NOARGS,
     "scoring_strategies() -> [names]: NodeResourcesFit's scoringStrategy.type values compiled in"},
    {NULL, NULL, 0, NULL},
};

int gp_kube_add_types(PyObject *module) {
    if (PyType_Ready(&ScorerType) < 0 || PyType_Ready(&NodeStateType) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Scorer", (PyObject *)&ScorerType) < 0 ||
        PyModule_AddObjectRef(module, "NodeState", (PyObject *)&NodeStateType) < 0)
        return -1;
    return PyModule_AddFunctions(module, functions);
}
