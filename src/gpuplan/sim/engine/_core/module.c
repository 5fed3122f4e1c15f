/* Python bindings of the batch engine: gpuplan.sim.engine._batchcore. Arrays come in through the buffer
 * protocol (NumPy arrays, C-contiguous, dtypes checked by size), so building needs no NumPy headers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

typedef struct {
    Py_buffer view;
    const char *name;
} Arg;

static int check_len(Arg *arg, Py_ssize_t n, Py_ssize_t itemsize) {
    if (arg->view.len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes, got %zd bytes",
                     arg->name, n, itemsize, arg->view.len);
        return -1;
    }
    return 0;
}

typedef struct {
    PyObject *callable; /* hook(now, usage_bytes) -> float64 buffer of fair-share factors */
    int32_t n_accounts;
} FairshareHook;

/* Called with the GIL held: hand each account's GPU-seconds since the last call, take factors. */
static int call_fairshare_hook(Sim *sim, double now) {
    FairshareHook *hook = sim->fairshare_state;
    PyObject *usage = PyBytes_FromStringAndSize((const char *)sim->acct_usage,
                                                (Py_ssize_t)hook->n_accounts * (Py_ssize_t)sizeof(double));
    if (!usage) return -1;
    PyObject *result = PyObject_CallFunction(hook->callable, "dN", now, usage);
    if (!result) return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(result, &view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(result);
        return -1;
    }
    int ok = view.len == (Py_ssize_t)hook->n_accounts * (Py_ssize_t)sizeof(double);
    if (ok) memcpy(sim->fs_factor, view.buf, (size_t)view.len);
    else PyErr_SetString(PyExc_ValueError, "fair-share hook: expected one float64 per account");
    PyBuffer_Release(&view);
    Py_DECREF(result);
    return ok ? 0 : -1;
}

/* Is each of `count` values an index in [0, bound)? Else a ValueError from `message` (a format
 * taking the position). */
static int check_indices(const int32_t *values, Py_ssize_t count, Py_ssize_t bound, const char *message) {
    for (Py_ssize_t k = 0; k < count; k++)
        if (values[k] < 0 || values[k] >= bound) {
            PyErr_Format(PyExc_ValueError, message, k);
            return -1;
        }
    return 0;
}

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
            PyErr_Format(PyExc_ValueError,
                         "job index %d: nodes must be in 1..total_nodes and gpus >= 0", j);
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(simulate_doc,
             "simulate(policy, total_nodes, params, submit, run, estimate, nodes, gpus, job_id, start, "
             "range_first, range_count, tl_time, tl_busy_gpus, tl_queued)\n"
             "--\n\n"
             "Run the batch engine with a compiled policy and its settings (params, float64, at most\n"
             "8). Fills start, range_first, range_count and the timeline; returns\n"
             "(timeline_rows, ranges_bytes).");

static PyObject *simulate(PyObject *self, PyObject *args) {
    const char *policy_name;
    int total_nodes;
    Py_buffer params = {0};
    PyObject *priority = Py_None, *limits = Py_None, *preempt = Py_None;
    PyObject *reservations = Py_None, *drains = Py_None, *topology = Py_None;
    int best_fit = 0;
    PyObject *users = Py_None, *quiet = Py_None;
    Py_buffer user_buf = {0}, quiet_buf = {0};
    Py_buffer res[7] = {{0}}, drain_buf[2] = {{0}};
    Py_buffer lim[6] = {{0}};
    Py_buffer pre[11] = {{0}};
    int64_t *running = NULL;
    Py_buffer prio_static = {0}, prio_account = {0}, prio_usage = {0};
    FairshareHook hook = {0};
    int node_gpus;
    Arg a[13] = {{.name = "submit"},      {.name = "run"},          {.name = "estimate"},
                 {.name = "nodes"},       {.name = "gpus"},         {.name = "job_id"},
                 {.name = "start"},       {.name = "range_first"},  {.name = "range_count"},
                 {.name = "tl_time"},     {.name = "tl_busy_gpus"}, {.name = "tl_queued"},
                 {.name = "gpus_per_node"}};
    if (!PyArg_ParseTuple(args, "siiy*y*y*y*y*y*y*w*w*w*w*w*w*y*|OOOOOOpOO", &policy_name, &total_nodes, &node_gpus,
                          &params, &a[0].view, &a[1].view, &a[2].view, &a[3].view, &a[4].view, &a[5].view,
                          &a[6].view, &a[7].view, &a[8].view, &a[9].view, &a[10].view, &a[11].view, &a[12].view,
                          &priority, &limits, &preempt, &reservations, &drains, &topology, &best_fit, &users,
                          &quiet))
        return NULL;
    PyObject *result = NULL;
    Sim sim;
    int sim_ready = 0;
    const PolicyEntry *policy = NULL;
    for (const PolicyEntry *p = GP_POLICIES; p->name; p++)
        if (strcmp(p->name, policy_name) == 0) policy = p;
    Py_ssize_t n = a[0].view.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t tl_cap = a[9].view.len / (Py_ssize_t)sizeof(double);
    if (!policy) {
        PyErr_Format(PyExc_ValueError, "unknown compiled policy %s", policy_name);
        goto done;
    }
    if (total_nodes < 1 || node_gpus < 1 || node_gpus > 4096 || n > INT32_MAX - 1 ||
        (int64_t)total_nodes * node_gpus > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError,
                        "need total_nodes >= 1, 1..4096 GPUs per node, fewer than 2**30 GPUs and 2**31 jobs");
        goto done;
    }
    const Py_ssize_t sizes[13] = {8, 8, 8, 4, 4, 8, 8, 8, 4, 0, 0, 0, 4};
    for (int k = 0; k < 13; k++)
        if (sizes[k] && check_len(&a[k], n, sizes[k]) < 0) goto done;
    if (check_len(&a[10], tl_cap, 8) < 0 || check_len(&a[11], tl_cap, 4) < 0) goto done;

    if (gp_sim_init(&sim, (int32_t)n, total_nodes, node_gpus) < 0) {
        gp_sim_free(&sim);
        PyErr_NoMemory();
        goto done;
    }
    sim_ready = 1;
    sim.submit = a[0].view.buf;
    sim.run = a[1].view.buf;
    sim.estimate = a[2].view.buf;
    sim.nodes = a[3].view.buf;
    sim.gpus = a[4].view.buf;
    sim.job_id = a[5].view.buf;
    sim.start = a[6].view.buf;
    sim.range_first = a[7].view.buf;
    sim.range_count = a[8].view.buf;
    sim.gpn = a[12].view.buf;
    sim.best_fit = best_fit;
    if (users != Py_None) { /* per job: its user's index, for bf_max_job_user */
        if (PyObject_GetBuffer(users, &user_buf, PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (user_buf.len != n * 4) {
            PyErr_SetString(PyExc_ValueError, "users: one int32 per job");
            goto done;
        }
        const int32_t *user = user_buf.buf;
        if (check_indices(user, n, INT32_MAX, "users: job index %zd has a negative user") < 0) goto done;
        int32_t n_users = 0;
        for (Py_ssize_t j = 0; j < n; j++)
            if (user[j] >= n_users) n_users = user[j] + 1;
        sim.job_user = user;
        sim.n_users = n_users;
    }
    if (quiet != Py_None) { /* per job: its arrival queues no scheduling request (--begin) */
        if (PyObject_GetBuffer(quiet, &quiet_buf, PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (quiet_buf.len != n) {
            PyErr_SetString(PyExc_ValueError, "submitted_early: one uint8 per job");
            goto done;
        }
        sim.quiet_arrival = quiet_buf.buf;
    }
    sim.whole_nodes = 1;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (sim.gpn[j] < 1 || sim.gpn[j] > node_gpus) {
            PyErr_Format(PyExc_ValueError, "job index %zd: gpus_per_node must be in 1..%d", j, node_gpus);
            goto done;
        }
        if (sim.gpn[j] != node_gpus) sim.whole_nodes = 0;
    }
    sim.whole_jobs = sim.whole_nodes;
    if (params.len > (Py_ssize_t)sizeof(sim.params) || params.len % (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "params: at most 16 float64 values");
        goto done;
    }
    memcpy(sim.params, params.buf, (size_t)params.len);
    if (check_jobs(&sim) < 0) goto done;
    if (priority != Py_None) {
        int n_accounts;
        if (!PyArg_ParseTuple(priority, "y*y*y*iddddOdp", &prio_static, &prio_account, &prio_usage, &n_accounts,
                              &sim.prio_weight_age, &sim.prio_max_age, &sim.prio_weight_fairshare,
                              &sim.prio_calc_period, &hook.callable, &sim.prio_calc_phase, &sim.tick_usage_only))
            goto done;
        if (prio_static.len != n * 8 || prio_account.len != n * 4 || prio_usage.len != n * 8 || n_accounts < 1) {
            PyErr_SetString(PyExc_ValueError,
                            "priority: static (float64), account (int32) and usage GPUs (float64) per job");
            goto done;
        }
        const int32_t *account = prio_account.buf;
        if (check_indices(account, n, n_accounts, "priority: job index %zd has no account") < 0) goto done;
        sim.prio_static = prio_static.buf;
        sim.account = account;
        sim.usage_gpus = prio_usage.buf;
        sim.n_accounts = n_accounts;
        hook.n_accounts = n_accounts;
        if (hook.callable != Py_None) {
            sim.fairshare = call_fairshare_hook;
            sim.fairshare_state = &hook;
        }
        if (gp_priority_init(&sim) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }

    if (limits != Py_None) {
        if (!PyArg_ParseTuple(limits, "y*y*y*y*y*w*", &lim[0], &lim[1], &lim[2], &lim[3], &lim[4], &lim[5]))
            goto done;
        Py_ssize_t groups = lim[1].len / 4, qos = lim[2].len / 8;
        if (lim[0].len != n * 4 || lim[3].len != qos * 8 || lim[4].len != qos * 8 || qos < 1 || lim[5].len != n) {
            PyErr_SetString(PyExc_ValueError,
                            "limits: group per job (int32), QoS per group, three int64 per QoS, then the "
                            "held reason per job (int8, out)");
            goto done;
        }
        const int32_t *group = lim[0].buf, *group_qos = lim[1].buf;
        if (check_indices(group, n, groups, "limits: job index %zd has no group") < 0 ||
            check_indices(group_qos, groups, qos, "limits: group %zd has no QoS") < 0)
            goto done;
        running = PyMem_RawCalloc((size_t)(2 * groups + qos), sizeof(int64_t));
        if (!running) {
            PyErr_NoMemory();
            goto done;
        }
        sim.limit_group = group;
        sim.group_qos = group_qos;
        sim.qos_max_gpus_per_user = lim[2].buf;
        sim.qos_max_jobs_per_user = lim[3].buf;
        sim.qos_grp_gpus = lim[4].buf;
        sim.group_gpus = running;
        sim.group_jobs = running + groups;
        sim.qos_gpus = running + 2 * groups;
        sim.held_reason = lim[5].buf;
        memset(sim.held_reason, 0, (size_t)n);
    }

    if (preempt != Py_None) {
        int n_classes;
        if (!PyArg_ParseTuple(preempt, "y*iy*y*y*y*y*dw*w*w*w*", &pre[0], &n_classes, &pre[1], &pre[2], &pre[3],
                              &pre[4], &pre[5], &sim.requeue_delay_s, &pre[6], &pre[7], &pre[8], &pre[9]))
            goto done;
        Py_ssize_t c = n_classes;
        if (n_classes < 1 || pre[0].len != n * 4 || pre[1].len != c * c || pre[2].len != c ||
            pre[3].len != c * 8 || pre[4].len != n * 8 || pre[5].len != n * 8 || pre[6].len != n * 8 ||
            pre[7].len != n * 4 || pre[8].len != n * 8 || pre[9].len != n) {
            PyErr_SetString(PyExc_ValueError,
                            "preempt: class (int32) per job, n x n can_preempt and mode (uint8), grace "
                            "(float64) per class, victim key and checkpoint (float64) per job, delay, "
                            "then out arrays end, preemptions, lost, cancelled");
            goto done;
        }
        const int32_t *cls = pre[0].buf;
        if (check_indices(cls, n, n_classes, "preempt: job index %zd has no class") < 0) goto done;
        sim.preempt_class = cls;
        sim.n_preempt_classes = n_classes;
        sim.can_preempt = pre[1].buf;
        sim.preempt_mode = pre[2].buf;
        sim.grace_s = pre[3].buf;
        sim.victim_key = pre[4].buf;
        sim.checkpoint_s = pre[5].buf;
        sim.end_out = pre[6].buf;
        sim.preemptions = pre[7].buf;
        sim.lost_gpu_s = pre[8].buf;
        sim.cancelled = pre[9].buf;
        sim.work_left = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(double));
        sim.attempt_start = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(double));
        sim.awaits_until = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(double));
        sim.vacating = PyMem_RawCalloc((size_t)(n ? n : 1), 1);
        sim.victim_scratch = PyMem_RawCalloc((size_t)total_nodes * (size_t)node_gpus,
                                             2 * sizeof(double) + 2 * sizeof(int64_t));
        if (!sim.work_left || !sim.attempt_start || !sim.awaits_until || !sim.vacating || !sim.victim_scratch) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(sim.work_left, sim.run, (size_t)n * sizeof(double));
        memset(sim.preemptions, 0, (size_t)n * 4);
        memset(sim.lost_gpu_s, 0, (size_t)n * 8);
        memset(sim.cancelled, 0, (size_t)n);
    }

    if (reservations != Py_None) {
        if (!PyArg_ParseTuple(reservations, "y*y*y*y*y*y*y*", &res[0], &res[1], &res[2], &res[3], &res[4],
                              &res[5], &res[6]))
            goto done;
        Py_ssize_t windows = res[0].len / 8, listed = res[5].len / 4;
        const int64_t *offsets = res[4].buf;
        int ok = res[1].len == windows * 8 && res[2].len == windows * 8 && res[3].len == n * 4 &&
                 res[4].len == ((Py_ssize_t)total_nodes + 1) * 8 && res[6].len % 8 == 0 && offsets[0] == 0 &&
                 offsets[total_nodes] == listed;
        for (int32_t node = 0; ok && node < total_nodes; node++) ok = offsets[node] <= offsets[node + 1];
        const int32_t *ids = res[5].buf;
        for (Py_ssize_t k = 0; ok && k < listed; k++) ok = ids[k] >= 0 && ids[k] < windows;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError,
                            "reservations: start, end (float64) and account mask (uint64) per window, account per "
                            "job, node offsets (int64, nodes + 1), window ids (int32), bounds (float64)");
            goto done;
        }
        sim.n_windows = (int32_t)windows;
        sim.win_start = res[0].buf;
        sim.win_end = res[1].buf;
        sim.win_accounts = res[2].buf;
        sim.job_account = res[3].buf;
        sim.node_win_offsets = offsets;
        sim.node_win_ids = ids;
        sim.win_bounds = res[6].buf;
        sim.n_bounds = (int32_t)(res[6].len / 8);
        sim.node_win_next = PyMem_RawCalloc((size_t)total_nodes, sizeof(int32_t));
        if (!sim.node_win_next) {
            PyErr_NoMemory();
            goto done;
        }
        if (windows) sim.whole_nodes = 0; /* nodes are no longer interchangeable */
    }

    if (drains != Py_None) {
        if (!PyArg_ParseTuple(drains, "y*y*d", &drain_buf[0], &drain_buf[1], &sim.drain_grace_s))
            goto done;
        Py_ssize_t count = drain_buf[0].len / 8;
        if (drain_buf[1].len != count * 4 || (count && !sim.preempt_class)) {
            PyErr_SetString(PyExc_ValueError,
                            "drains: time (float64) and node delta (int32) per event, with preemption state");
            goto done;
        }
        sim.n_drains = (int32_t)count;
        sim.drain_time = drain_buf[0].buf;
        sim.drain_delta = drain_buf[1].buf;
        sim.node_off = PyMem_RawCalloc((size_t)total_nodes, 1);
        sim.lent_stack = PyMem_RawCalloc((size_t)total_nodes, sizeof(int32_t));
        if (!sim.node_off || !sim.lent_stack) {
            PyErr_NoMemory();
            goto done;
        }
        if (count) sim.whole_nodes = 0; /* nodes are no longer interchangeable */
    }

    if (topology != Py_None) {
        if (!PyArg_ParseTuple(topology, "ip", &sim.block_nodes, &sim.block_require)) goto done;
        if (sim.block_nodes < 1) {
            PyErr_SetString(PyExc_ValueError, "topology: at least one node per block");
            goto done;
        }
        int32_t blocks = (total_nodes + sim.block_nodes - 1) / sim.block_nodes;
        sim.block_count = PyMem_RawCalloc(2 * (size_t)blocks, sizeof(int32_t)); /* counts, then an order */
        sim.block_nodes_scratch = PyMem_RawCalloc((size_t)total_nodes, sizeof(int32_t));
        if (!sim.block_count || !sim.block_nodes_scratch) {
            PyErr_NoMemory();
            goto done;
        }
        if (sim.block_require) sim.whole_nodes = 0; /* a fit depends on which nodes are free */
    }

    int64_t rows;
    Py_BEGIN_ALLOW_THREADS
    rows = gp_run(&sim, policy->pass, a[9].view.buf, a[10].view.buf, a[11].view.buf, tl_cap);
    Py_END_ALLOW_THREADS
    if (rows == -3) goto done; /* the hook's exception, or KeyboardInterrupt, is set */
    if (rows == -4) {
        PyErr_SetString(PyExc_RuntimeError, "timeline capacity too small");
        goto done;
    }
    if (rows == -2) {
        PyErr_Format(PyExc_RuntimeError, "policy %s started a job that did not fit", policy_name);
        goto done;
    }
    if (rows < 0) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *ranges = PyBytes_FromStringAndSize((const char *)sim.ranges,
                                                 (Py_ssize_t)(sim.ranges_len * 2 * sizeof(int32_t)));
    if (!ranges) goto done;
    result = Py_BuildValue("LN", (long long)rows, ranges);
done:
    if (sim_ready) gp_sim_free(&sim);
    if (params.obj) PyBuffer_Release(&params);
    if (prio_static.obj) PyBuffer_Release(&prio_static);
    PyMem_RawFree(running);
    for (int k = 0; k < 6; k++)
        if (lim[k].obj) PyBuffer_Release(&lim[k]);
    if (prio_account.obj) PyBuffer_Release(&prio_account);
    if (prio_usage.obj) PyBuffer_Release(&prio_usage);
    if (user_buf.obj) PyBuffer_Release(&user_buf);
    if (quiet_buf.obj) PyBuffer_Release(&quiet_buf);
    for (int k = 0; k < 7; k++)
        if (res[k].obj) PyBuffer_Release(&res[k]);
    for (int k = 0; k < 2; k++)
        if (drain_buf[k].obj) PyBuffer_Release(&drain_buf[k]);
    for (int k = 0; k < 11; k++)
        if (pre[k].obj) PyBuffer_Release(&pre[k]);
    for (int k = 0; k < 13; k++)
        if (a[k].view.obj) PyBuffer_Release(&a[k].view);
    return result;
}

PyDoc_STRVAR(hostlists_doc,
             "hostlists(prefix, ranges, range_first, range_count) -> (offsets, data)\n"
             "--\n\n"
             "Slurm-style host lists (\"gpu[0-15,32]\", \"gpu7\", or \"\" for no node) for each job,\n"
             "as the int64 offsets and UTF-8 bytes of an Arrow large_string array.");

static PyObject *hostlists(PyObject *self, PyObject *args) {
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

static PyObject *policies(PyObject *self, PyObject *unused) {
    PyObject *names = PyList_New(0);
    if (!names) return NULL;
    for (const PolicyEntry *p = GP_POLICIES; p->name; p++) {
        PyObject *name = PyUnicode_FromString(p->name);
        if (!name || PyList_Append(names, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(name);
    }
    return names;
}

static PyMethodDef methods[] = {
    {"simulate", simulate, METH_VARARGS, simulate_doc},
    {"hostlists", hostlists, METH_VARARGS, hostlists_doc},
    {"policies", policies, METH_NOARGS, "policies() -> names of the compiled scheduling passes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batchcore", "Compiled discrete-event batch engine of gpuplan.", -1, methods,
};

PyMODINIT_FUNC PyInit__batchcore(void) { return PyModule_Create(&module); }
