/*
 * Power saving (slurmctld/power_save.c): a node idle for SuspendTime is powered down
 * (_do_power_work: last_busy older than now - suspend_time), and a job given a powered-down node
 * waits for it to boot (node_scheduler.c:select_nodes flags the job JOB_POWER_UP_NODE and
 * CONFIGURING; job_mgr.c:job_config_fini resets its start time once the nodes are up). The nodes
 * booting are allocated to the job, and paid, but run nothing. Nodes start powered down, as the
 * OCI HPC Stack's on-demand nodes do (State=CLOUD: "its initial state will be treated as powered
 * down", slurm.conf(5)). Node choice takes the nodes that are up first (the core's power_down).
 *
 * What the piece does not model: SuspendTimeout (a node powering down is counted down at once and
 * may take a job at once, after its boot), SuspendRate and ResumeRate (the OCI HPC Stack sets both
 * to 0: no limit), and a boot that fails (ResumeTimeout passes and the node goes DOWN).
 *
 * Outputs per node: when it last went idle (idle_since_s; NaN: busy at the end), the seconds it
 * was powered down before its last boot (powered_down_s) and its boots. A node is up from t = 0 to
 * idle_since_s + suspend_time_s, less powered_down_s: the pool's node-hours up, which cost counts.
 */
#include <math.h>
#include <string.h>

#include "plugins.h"

typedef struct {
    double suspend_s; /* SuspendTime */
    double boot_s;    /* how long a powered-down node takes to be up (at most ResumeTimeout) */
    double *idle_since;
    double *powered_down_s;
    int32_t *boots;
    double *ready_at;   /* when each node's last boot ends */
    GpEvent *idle_heap; /* (time a node went idle, node), to power it down SuspendTime later */
    int32_t idle_len, idle_cap;
} Power;

static inline void set_down(Sim *sim, int32_t node, int down) {
    uint64_t bit = UINT64_C(1) << (node & 63);
    if (down)
        sim->power_down[node >> 6] |= bit;
    else
        sim->power_down[node >> 6] &= ~bit;
}

/* Nodes idle for SuspendTime power down (a node busy again since is no longer idle_since then). */
static int power_instant(Sim *sim, void *state, double now) {
    Power *p = state;
    while (p->idle_len > 0 && p->idle_heap[0].time + p->suspend_s <= now) {
        GpEvent idle = gp_event_pop(p->idle_heap, &p->idle_len);
        if (p->idle_since[idle.job] == idle.time) set_down(sim, idle.job, 1);
    }
    return 0;
}

/* The job's nodes left wholly free go idle now (called before the core frees them). */
static void power_job_ended(Sim *sim, void *state, int32_t job) {
    Power *p = state;
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++) {
            if (sim->node_free[node] + sim->gpn[job] != sim->node_gpus) continue; /* other jobs on it */
            p->idle_since[node] = sim->now;
            gp_event_push(sim, &p->idle_heap, &p->idle_len, &p->idle_cap, (GpEvent){sim->now, node});
        }
}

/* The job waits for the slowest of its nodes to be up: a powered-down one boots now. */
static double power_start_delay(Sim *sim, void *state, int32_t job, double now) {
    Power *p = state;
    double delay = 0.0;
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++) {
            if (gp_powered_down(sim, node)) {
                set_down(sim, node, 0);
                p->powered_down_s[node] += now - (p->idle_since[node] + p->suspend_s);
                p->boots[node]++;
                p->ready_at[node] = now + p->boot_s;
            }
            p->idle_since[node] = NAN; /* busy */
            if (p->ready_at[node] - now > delay) delay = p->ready_at[node] - now;
        }
    return delay;
}

static void power_free(void *state) {
    Power *p = state;
    if (!p) return;
    PyMem_RawFree(p->ready_at);
    PyMem_RawFree(p->idle_heap);
    PyMem_RawFree(p);
}

static const GpHooks POWER_HOOKS = {.instant = power_instant,
                                    .job_ended = power_job_ended,
                                    .start_delay = power_start_delay,
                                    .free = power_free};

/* Settings (engine/core.py PowerSaving.for_engine): suspend_time_s, boot_s; outputs per node:
 * idle_since_s, powered_down_s (float64) and boots (int32). Not with lending (node_off). */
static int power_setup(Sim *sim, GpSettings *s) {
    double suspend_s, boot_s;
    void *idle_since, *powered_down_s, *boots;
    Py_ssize_t nodes = sim->total_nodes;
    if (gp_read_double(s, "suspend_time_s", &suspend_s) < 0 || gp_read_double(s, "boot_s", &boot_s) < 0 ||
        gp_read_array(s, "idle_since_s", 8, nodes, 1, 0, &idle_since, NULL) < 0 ||
        gp_read_array(s, "powered_down_s", 8, nodes, 1, 0, &powered_down_s, NULL) < 0 ||
        gp_read_array(s, "boots", 4, nodes, 1, 0, &boots, NULL) < 0)
        return -1;
    if (!(suspend_s >= 0 && isfinite(suspend_s) && boot_s >= 0 && isfinite(boot_s))) {
        PyErr_SetString(PyExc_ValueError, "power_save: suspend_time_s and boot_s must be finite and >= 0");
        return -1;
    }
    if (sim->node_off) {
        PyErr_SetString(PyExc_ValueError, "power_save: not with lending");
        return -1;
    }
    Power *p = PyMem_RawCalloc(1, sizeof(Power));
    if (p) p->ready_at = PyMem_RawCalloc((size_t)nodes, sizeof(double));
    if (!p || !p->ready_at || gp_enable_power(sim) < 0 || gp_add_piece(sim, s->piece, &POWER_HOOKS, p) < 0) {
        power_free(p);
        PyErr_NoMemory();
        return -1;
    }
    p->suspend_s = suspend_s;
    p->boot_s = boot_s;
    p->idle_since = idle_since;
    p->powered_down_s = powered_down_s;
    p->boots = boots;
    for (int32_t node = 0; node < sim->total_nodes; node++) { /* powered down from t = 0 */
        set_down(sim, node, 1);
        p->idle_since[node] = -suspend_s;
        p->powered_down_s[node] = 0.0;
        p->boots[node] = 0;
    }
    return 0;
}

const GpPlugin GP_POWER_PLUGINS[] = {
    {"power_save", "SuspendTime: idle nodes power down; a job on one waits for its boot", power_setup},
    {NULL, NULL, NULL},
};
