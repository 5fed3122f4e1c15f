/*
 * Slurm preemption (PreemptType): which running jobs a pending job may preempt, in which order, and
 * what happens to them (PreemptMode, GraceTime, requeue with checkpoints). The classes, the
 * may-preempt matrix and each job's victim key come from the Python side (preemption.py), per
 * plugin; the plugin here gives the victim order.
 *
 * - preempt/partition_prio and preempt/qos: Slurm's candidate order (slurmctld/preempt.c:
 *   slurm_find_preemptable_jobs sorts the job list by _sort_by_prio), preempt_p_get_prio ascending
 *   (the partition's PriorityTier or the QoS's Priority << 16 + nodes: lower tier or QoS first,
 *   smaller jobs first), ties in job-list order (creation: job id); with youngest_first
 *   (SchedulerParameters=preempt_youngest_first; PreemptParameters=youngest_first from 23.02) by
 *   start time alone, latest first (_sort_by_youngest), ties in job-list order.
 * - preempt/none: no job preempts another, but jobs may still be requeued (evicted from nodes lent
 *   away), which needs the same state.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins.h"
#include "preempt.h"
#include "reservations.h"

typedef struct {
    double key, start;
    int64_t job_id;
    int32_t job, nodes;
} Victim;

static int job_list_cmp(const Victim *a, const Victim *b) {
    return (a->job_id > b->job_id) - (a->job_id < b->job_id);
}

static int slurm_victim_cmp(const void *pa, const void *pb) {
    const Victim *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return job_list_cmp(a, b);
}

static int youngest_victim_cmp(const void *pa, const void *pb) {
    const Victim *a = pa, *b = pb;
    if (a->start != b->start) return a->start > b->start ? -1 : 1;
    return job_list_cmp(a, b);
}

static const GpPreemptOps SLURM_ORDER = {slurm_victim_cmp};
static const GpPreemptOps YOUNGEST_ORDER = {youngest_victim_cmp};

void gp_preempt_vacate(Sim *sim, int32_t job, double now, int mode) {
    struct GpPreempt *p = sim->preempt;
    gp_job_leave(sim, job);
    sim->end_time[job] = NAN; /* its pending end event is stale now */
    p->vacating[job] = 0;
    p->preemptions[job]++;
    double executed = fmax(now - sim->attempt_start[job], 0.0); /* (vacated while its nodes booted: none) */
    double gpus = (double)sim->gpus[job];
    if (mode == GP_PREEMPT_CANCEL) {
        p->cancelled[job] = 1;
        p->lost_gpu_s[job] += executed * gpus;
        return;
    }
    double saved = executed; /* SUSPEND: resumes where it stopped */
    double requeue_at = now;
    if (mode == GP_PREEMPT_REQUEUE) {
        saved = gp_checkpointed(executed, p->checkpoint_s[job]);
        requeue_at = now + p->requeue_delay_s;
    }
    p->lost_gpu_s[job] += (executed - saved) * gpus;
    p->work_left[job] -= saved;
    if (p->work_left[job] < 0) p->work_left[job] = 0;
    gp_requeue_at(sim, job, requeue_at, mode == GP_PREEMPT_REQUEUE);
}

/* Victims taken in `cand` order until the job fits on what they and the free GPUs give: how many,
 * or -1 when all of them do not make room. Nodes the job may not use stay short whatever is freed:
 * one outside `allowed`, or one an advance reservation holds during its run (as gp_fits_now finds). */
static int32_t take_until_fit(Sim *sim, const Victim *cand, int32_t count, int32_t slot, double now,
                              const uint64_t *allowed) {
    int32_t job = sim->q_job[slot], nodes = sim->q_nodes[slot], taken = 0;
    gp_overlay_begin(sim, 1);
    double until = now + sim->q_estimate[slot];
    if (allowed || sim->reservations)
        for (int32_t node = 0; node < sim->total_nodes; node++)
            if ((allowed && !(allowed[node >> 6] >> (node & 63) & 1)) ||
                (sim->reservations && gp_window_blocks_at(sim, node, job, now, until)))
                gp_overlay_add(sim, node, -gp_overlay_free(sim, node) - sim->node_gpus - 1, 0, 0);
    while (taken < count && gp_overlay_fit_count(sim, job) < nodes) gp_overlay_add_job(sim, cand[taken++].job, +1);
    return gp_overlay_fit_count(sim, job) >= nodes ? taken : -1;
}

/* Most nodes first, stably (Slurm's list_sort is glibc's qsort, a merge sort). */
static void most_nodes_first(Victim *victims, int32_t count) {
    for (int32_t i = 1; i < count; i++) {
        Victim v = victims[i];
        int32_t j = i;
        for (; j > 0 && victims[j - 1].nodes < v.nodes; j--) victims[j] = victims[j - 1];
        victims[j] = v;
    }
}

/* preempt_reorder_count (SchedulerParameters; Slurm's default 1): the passes after the first */
#define PREEMPT_REORDER_COUNT 1

int gp_try_preempt(Sim *sim, int32_t slot, double now, const uint64_t *allowed) {
    struct GpPreempt *p = sim->preempt;
    int32_t job = sim->q_job[slot];
    int32_t cls = p->preempt_class[job], n = p->n_classes;
    if (p->awaits_until[job] > now) return 0; /* its victims are still in their grace time */
    Victim *cand = p->victim_scratch;
    int32_t count = 0;
    for (int32_t k = 0; k < sim->est_len; k++) {
        int32_t running = sim->est_heap[k];
        if (p->vacating[running] || !p->can_preempt[cls * n + p->preempt_class[running]]) continue;
        cand[count++] = (Victim){p->victim_key[running], sim->attempt_start[running], sim->job_id[running],
                                 running, sim->nodes[running]};
    }
    qsort(cand, (size_t)count, sizeof(Victim), p->ops->victim_cmp);
    /* Slurm's select/cons_tres (job_test.c:_run_now): take candidates in order until the job fits;
     * then, up to preempt_reorder_count times, put the last one taken first, the others taken before
     * it next by how many nodes they give the job (most first, stable: here each victim's node
     * count), and try again, so a larger later victim spares the smaller ones it covers. */
    int32_t taken = take_until_fit(sim, cand, count, slot, now, allowed);
    if (taken < 0) return 0;
    for (int32_t pass = 1; pass <= PREEMPT_REORDER_COUNT + 1 && pass < count; pass++) {
        Victim last = cand[taken - 1];
        memmove(cand + 1, cand, (size_t)(taken - 1) * sizeof(Victim));
        cand[0] = last;
        most_nodes_first(cand + 1, taken - 1);
        taken = take_until_fit(sim, cand, count, slot, now, allowed);
        if (taken < 0) return 0; /* cannot happen: the same victims are all still there */
    }
    /* the overlay holds the last pass's victims: drop any whose nodes the job turns out not to need
     * (Slurm preempts only jobs on the nodes it selects) */
    int32_t nodes = sim->q_nodes[slot];
    for (int32_t k = 0; k < taken; k++) {
        gp_overlay_add_job(sim, cand[k].job, -1);
        if (gp_overlay_fit_count(sim, job) >= nodes)
            cand[k].job = -1;
        else
            gp_overlay_add_job(sim, cand[k].job, +1);
    }
    double wait_until = now;
    for (int32_t k = 0; k < taken; k++) {
        int32_t victim = cand[k].job;
        if (victim < 0) continue;
        double leave = now + p->grace_s[p->preempt_class[victim]];
        if (leave <= now) {
            gp_preempt_vacate(sim, victim, now, p->preempt_mode[p->preempt_class[victim]]);
            continue;
        }
        p->vacating[victim] = 1;
        /* else it ends on its own before its grace is over */
        if (leave < sim->end_time[victim]) gp_job_leaves_early(sim, victim, leave);
        if (leave > wait_until) wait_until = leave;
    }
    if (wait_until > now) {
        p->awaits_until[job] = wait_until;
        return 0;
    }
    return 1;
}

static void preempt_started(Sim *sim, void *state, int32_t job, double now) {
    (void)sim;
    (void)now;
    ((struct GpPreempt *)state)->awaits_until[job] = -INFINITY;
}

static void preempt_ended(Sim *sim, void *state, int32_t job) { ((struct GpPreempt *)state)->end_out[job] = sim->now; }

/* A job in its grace time whose end event comes before its work is done leaves as its mode says. */
static int preempt_end_due(Sim *sim, void *state, int32_t job, double time) {
    struct GpPreempt *p = state;
    if (!(p->vacating[job] && time < sim->attempt_start[job] + p->work_left[job])) return 0;
    gp_preempt_vacate(sim, job, sim->now, p->preempt_mode[p->preempt_class[job]]);
    return 1;
}

static void preempt_free(void *state) {
    struct GpPreempt *p = state;
    if (!p) return;
    PyMem_RawFree(p->work_left);
    PyMem_RawFree(p->awaits_until);
    PyMem_RawFree(p->vacating);
    PyMem_RawFree(p->victim_scratch);
    PyMem_RawFree(p);
}

static const GpHooks PREEMPT_HOOKS = {
    .job_started = preempt_started, .job_ended = preempt_ended, .end_due = preempt_end_due, .free = preempt_free};

/* Settings (preemption.py PreemptionInputs.for_engine): job_class (int32) and victim_key,
 * checkpoint_s (float64) per job; can_preempt (uint8, classes x classes); mode (uint8) and grace_s
 * (float64) per class; requeue_delay_s; youngest_first; out per job: end_s (float64), preemptions (int32),
 * lost_gpu_s (float64), cancelled (int8). */
static int preempt_setup_with(Sim *sim, GpSettings *s, const GpPreemptOps *ops) {
    struct GpPreempt p = {.ops = ops};
    Py_ssize_t n = s->n_jobs, c;
    void *cls, *can, *mode, *grace, *key, *checkpoint, *end, *count, *lost, *cancelled;
    int youngest_first;
    if (gp_read_bool(s, "youngest_first", &youngest_first) < 0 ||
        gp_read_array(s, "mode", 1, -1, 0, 0, &mode, &c) < 0 ||
        gp_read_array(s, "job_class", 4, n, 0, 0, &cls, NULL) < 0 ||
        gp_read_array(s, "can_preempt", 1, c * c, 0, 0, &can, NULL) < 0 ||
        gp_read_array(s, "grace_s", 8, c, 0, 0, &grace, NULL) < 0 ||
        gp_read_array(s, "victim_key", 8, n, 0, 0, &key, NULL) < 0 ||
        gp_read_array(s, "checkpoint_s", 8, n, 0, 0, &checkpoint, NULL) < 0 ||
        gp_read_double(s, "requeue_delay_s", &p.requeue_delay_s) < 0 ||
        gp_read_array(s, "end_s", 8, n, 1, 0, &end, NULL) < 0 ||
        gp_read_array(s, "preemptions", 4, n, 1, 0, &count, NULL) < 0 ||
        gp_read_array(s, "lost_gpu_s", 8, n, 1, 0, &lost, NULL) < 0 ||
        gp_read_array(s, "cancelled", 1, n, 1, 0, &cancelled, NULL) < 0)
        return -1;
    if (c < 1) {
        PyErr_SetString(PyExc_ValueError, "preempt: at least one class");
        return -1;
    }
    if (gp_check_indices(cls, n, c, "preempt: job index %zd has no class") < 0) return -1;
    if (youngest_first) p.ops = &YOUNGEST_ORDER;
    p.preempt_class = cls;
    p.n_classes = (int32_t)c;
    p.can_preempt = can;
    p.preempt_mode = mode;
    p.grace_s = grace;
    p.victim_key = key;
    p.checkpoint_s = checkpoint;
    p.end_out = end;
    p.preemptions = count;
    p.lost_gpu_s = lost;
    p.cancelled = cancelled;
    size_t rows = (size_t)(n ? n : 1);
    struct GpPreempt *state = PyMem_RawMalloc(sizeof(struct GpPreempt));
    if (state) {
        *state = p;
        state->work_left = PyMem_RawMalloc(rows * sizeof(double));
        state->awaits_until = PyMem_RawCalloc(rows, sizeof(double));
        state->vacating = PyMem_RawCalloc(rows, 1);
        state->victim_scratch = PyMem_RawCalloc((size_t)sim->total_nodes * (size_t)sim->node_gpus, sizeof(Victim));
    }
    if (!state || !state->work_left || !state->awaits_until || !state->vacating || !state->victim_scratch ||
        gp_add_piece(sim, s->piece, &PREEMPT_HOOKS, state) < 0) {
        preempt_free(state);
        PyErr_NoMemory();
        return -1;
    }
    sim->preempt = state;
    memcpy(state->work_left, sim->run, (size_t)n * sizeof(double));
    memset(state->preemptions, 0, (size_t)n * 4);
    memset(state->lost_gpu_s, 0, (size_t)n * 8);
    memset(state->cancelled, 0, (size_t)n);
    if (gp_enable_restarts(sim, state->work_left) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int slurm_order_setup(Sim *sim, GpSettings *s) { return preempt_setup_with(sim, s, &SLURM_ORDER); }

const GpPlugin GP_PREEMPT_PLUGINS[] = {
    {"preempt/partition_prio", "jobs of higher-PriorityTier partitions preempt lower ones", slurm_order_setup},
    {"preempt/qos", "jobs of a QoS preempt the QoS its Preempt= lists", slurm_order_setup},
    {"preempt/none", "no preemption; jobs evicted from lent nodes are requeued", slurm_order_setup},
    {NULL, NULL, NULL},
};
