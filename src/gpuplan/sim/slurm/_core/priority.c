/*
 * The queue's priority order: Slurm's PriorityType=priority/multifactor.
 *
 *   priority = static part (job size, partition, QoS factors times their PriorityWeight*)
 *            + PriorityWeightAge * min(age / PriorityMaxAge, 1)
 *            + PriorityWeightFairshare * fair-share factor of the job's account
 *
 * truncated to a whole number (priority_multifactor.c:_get_priority_internal). Every
 * PriorityCalcPeriod from slurmctld's start (the decay thread's ticks) the engine hands each
 * account's GPU-seconds since the last tick to the fair-share hook (Python: decay and the
 * fair-share formula live there), recomputes the priority of every queued job and sorts the queue:
 * priority high to low, then submit time, then job id. A job that arrives in between gets its
 * priority at once, from the last tick's fair-share factors, and is inserted in order, as slurmctld
 * does. Without AccountingStorageEnforce=limits a job that ends between ticks loses its use since
 * the last tick (the tick skips finished jobs and nothing adds it at the end).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int gp_priority_init(Sim *sim) {
    int32_t n = sim->n_jobs, a = sim->n_accounts > 0 ? sim->n_accounts : 1;
    sim->priority = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(double));
    sim->fs_factor = PyMem_RawCalloc((size_t)a, sizeof(double));
    sim->acct_usage = PyMem_RawCalloc((size_t)a, sizeof(double));
    sim->acct_running_gpus = PyMem_RawCalloc((size_t)a, sizeof(double));
    for (int32_t k = 0; k < a && sim->fs_factor; k++) sim->fs_factor[k] = 1.0; /* no usage yet */
    sim->next_recalc = -INFINITY;
    sim->last_recalc = -INFINITY;
    return (sim->priority && sim->fs_factor && sim->acct_usage && sim->acct_running_gpus) ? 0 : -1;
}

void gp_priority_free(Sim *sim) {
    PyMem_RawFree(sim->priority);
    PyMem_RawFree(sim->fs_factor);
    PyMem_RawFree(sim->acct_usage);
    PyMem_RawFree(sim->acct_running_gpus);
}

static double job_priority(const Sim *sim, int32_t job, double now) {
    double age = sim->prio_max_age > 0 ? (now - sim->submit[job]) / sim->prio_max_age : 1.0;
    if (age > 1) age = 1;
    return floor(sim->prio_static[job] + sim->prio_weight_age * age +
                 sim->prio_weight_fairshare * sim->fs_factor[sim->account[job]]);
}

/* Queue order: higher priority first, then earlier submit, then lower job id (then index). */
static int before(const Sim *sim, int32_t a, int32_t b) {
    if (sim->priority[a] != sim->priority[b]) return sim->priority[a] > sim->priority[b];
    if (sim->submit[a] != sim->submit[b]) return sim->submit[a] < sim->submit[b];
    if (sim->job_id[a] != sim->job_id[b]) return sim->job_id[a] < sim->job_id[b];
    return a < b;
}

typedef struct {
    double priority, submit;
    int64_t job_id;
    int32_t job, nodes;
    double estimate;
} Entry;

static int entry_cmp(const void *pa, const void *pb) {
    const Entry *a = pa, *b = pb;
    if (a->priority != b->priority) return a->priority > b->priority ? -1 : 1;
    if (a->submit != b->submit) return a->submit < b->submit ? -1 : 1;
    if (a->job_id != b->job_id) return a->job_id < b->job_id ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

/* Recompute every queued job's priority and sort the queue (closing holes). */
static int resort(Sim *sim, double now) {
    int32_t count = 0;
    Entry *entries = PyMem_RawMalloc((size_t)(sim->q_len ? sim->q_len : 1) * sizeof(Entry));
    if (!entries) return -1;
    for (int32_t s = sim->q_first; s < sim->q_count; s++) {
        if (sim->q_nodes[s] == GP_GONE) continue;
        int32_t job = sim->q_job[s];
        sim->priority[job] = job_priority(sim, job, now);
        entries[count++] = (Entry){sim->priority[job], sim->submit[job], sim->job_id[job], job,
                                   sim->q_nodes[s], sim->q_estimate[s]};
    }
    qsort(entries, (size_t)count, sizeof(Entry), entry_cmp);
    for (int32_t k = 0; k < count; k++) {
        sim->q_job[k] = entries[k].job;
        sim->q_nodes[k] = entries[k].nodes;
        sim->q_estimate[k] = entries[k].estimate;
    }
    PyMem_RawFree(entries);
    sim->q_first = 0;
    sim->q_count = count;
    sim->q_holes = 0;
    return 0;
}

void gp_priority_insert(Sim *sim, int32_t slot) {
    int32_t job = sim->q_job[slot];
    int32_t nodes = sim->q_nodes[slot];
    double estimate = sim->q_estimate[slot];
    sim->priority[job] = job_priority(sim, job, sim->now);
    /* move it up past queued jobs it comes before (holes are moved along; order is kept) */
    int32_t s = slot;
    while (s > sim->q_first) {
        int32_t prev = s - 1;
        if (sim->q_nodes[prev] != GP_GONE && !before(sim, job, sim->q_job[prev])) break;
        sim->q_job[s] = sim->q_job[prev];
        sim->q_nodes[s] = sim->q_nodes[prev];
        sim->q_estimate[s] = sim->q_estimate[prev];
        s = prev;
    }
    sim->q_job[s] = job;
    sim->q_nodes[s] = nodes;
    sim->q_estimate[s] = estimate;
}

void gp_priority_started(Sim *sim, int32_t job, int sign) {
    int32_t account = sim->account[job];
    sim->acct_running_gpus[account] += sign * sim->usage_gpus[job];
    if (sign < 0 && sim->tick_usage_only) { /* its use since the last tick was accrued: drop it */
        double began = sim->attempt_start ? sim->attempt_start[job] : sim->start[job];
        sim->acct_usage[account] -= sim->usage_gpus[job] * (sim->now - fmax(began, sim->last_recalc));
    }
}

int gp_priority_instant(Sim *sim, double now) {
    for (int32_t a = 0; a < sim->n_accounts; a++)
        sim->acct_usage[a] += sim->acct_running_gpus[a] * (now - sim->usage_clock);
    sim->usage_clock = now;
    if (now >= sim->next_recalc) {
        if (sim->fairshare) {
            PyGILState_STATE gil = PyGILState_Ensure();
            int failed = sim->fairshare(sim, now);
            PyGILState_Release(gil);
            if (failed) {
                sim->hook_error = 1;
                return -1;
            }
        }
        memset(sim->acct_usage, 0, (size_t)sim->n_accounts * sizeof(double));
        if (resort(sim, now) < 0) {
            sim->out_of_memory = 1;
            return -1;
        }
        double period = sim->prio_calc_period > 0 ? sim->prio_calc_period : 300;
        double phase = sim->prio_calc_phase;
        sim->last_recalc = now;
        sim->next_recalc = phase + (floor((now - phase) / period) + 1) * period;
    }
    return 0;
}
