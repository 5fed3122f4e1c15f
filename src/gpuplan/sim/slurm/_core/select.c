/*
 * Node choice (SelectType): which of the candidate nodes a job takes.
 *
 * - select/cons_tres and select/linear: Slurm's best fit (select/cons_tres job_test.c:_eval_nodes,
 *   its default path): the candidates form runs of consecutive nodes, each measured by its nodes'
 *   available CPUs (avail_cpus: free CPUs, rounded down to a multiple of --cpus-per-task). Take the
 *   run that holds the rest of the job with the fewest CPUs (the first of equal ones), else the one
 *   with the most CPUs (the first of equal ones) whole, and repeat. Of the run taken, a job's last
 *   node (or its only one) is the node with the fewest available CPUs (the lowest of equal ones),
 *   its other nodes the run's lowest. So a job sharing nodes goes to the most used node of the
 *   smallest run (cpu-memory-spec examples 1a-2c). Idle nodes have all their CPUs, so for a job on
 *   whole nodes a run's CPUs count its nodes: with free nodes 0, 1, 5, 7 a 3-node job gets 0, 1, 5;
 *   with 0, 1, 2, 4 a 1-node job gets 4. (Whether a job takes whole nodes or its GPUs only, the
 *   difference of the two plugins, is each job's GPUs per node, set on the Python side.)
 * - select/first_fit: the lowest-numbered candidates, the placement of the scheduling literature's
 *   simulators (for the textbook passes sched/builtin and sched/easy).
 */
#include <string.h>

#include "plugins.h"

typedef struct {
    int32_t *run_start, *run_len; /* runs of consecutive candidate nodes */
    int64_t *run_cpus;            /* their available CPUs */
} BestFit;

/* job_test.c:_eval_nodes avail_cpus of `node` for `job`: its free CPUs (now, or on the overlay),
 * rounded down to a multiple of the job's CPUs per task. */
static inline int32_t avail_cpus(const Sim *sim, int32_t node, int32_t job, int on_overlay) {
    int32_t free = on_overlay ? gp_overlay_cpus(sim, node) : sim->cpu_free[node], step = sim->job_cpu_step[job];
    return step > 1 ? free - free % step : free;
}

/* Runs of consecutive set bits of `bits` (n_words words): starts and lengths; returns how many. */
static int32_t bit_runs(const uint64_t *bits, int32_t n_words, int32_t *run_start, int32_t *run_len) {
    int32_t runs = 0, open = -1;
    for (int32_t w = 0; w < n_words; w++) {
        uint64_t b = bits[w];
        int32_t pos = 0;
        while (pos < 64) {
            uint64_t rest = open >= 0 ? ~b >> pos : b >> pos; /* looking for the run's end, or a start */
            if (rest == 0) break;
            pos += __builtin_ctzll(rest);
            if (open >= 0) {
                run_start[runs] = open;
                run_len[runs++] = 64 * w + pos - open;
                open = -1;
            } else {
                open = 64 * w + pos;
            }
        }
    }
    if (open >= 0) {
        run_start[runs] = open;
        run_len[runs++] = 64 * n_words - open;
    }
    return runs;
}

static int32_t best_fit_choose(Sim *sim, void *state, const uint64_t *candidates, int32_t count, int32_t job,
                               int on_overlay) {
    BestFit *fit = state;
    int32_t *run_start = fit->run_start, *run_len = fit->run_len;
    int64_t *run_cpus = fit->run_cpus;
    int32_t runs = bit_runs(candidates, sim->n_words, run_start, run_len);
    int measured = gp_counts_res(sim, job); /* else every candidate is idle: a run's CPUs count its nodes */
    for (int32_t r = 0; r < runs; r++) {
        run_cpus[r] = run_len[r];
        if (!measured) continue;
        run_cpus[r] = 0;
        for (int32_t node = run_start[r]; node < run_start[r] + run_len[r]; node++)
            run_cpus[r] += avail_cpus(sim, node, job, on_overlay);
    }
    int32_t found = 0, taken = 0; /* runs taken are moved to the front, as (first node, nodes taken) */
    while (found < count) {
        int32_t want = count - found, best = -1;
        for (int32_t r = taken; r < runs; r++) {
            if (best < 0) {
                best = r;
                continue;
            }
            int enough = run_len[r] >= want, best_enough = run_len[best] >= want;
            if ((enough && (!best_enough || run_cpus[r] < run_cpus[best])) ||
                (!enough && !best_enough && run_cpus[r] > run_cpus[best]))
                best = r;
        }
        if (best < 0) break;
        int32_t start = run_start[best], take = run_len[best] < want ? run_len[best] : want;
        if (want == 1 && measured) { /* the last node: the one with the fewest available CPUs */
            int32_t fewest = avail_cpus(sim, start, job, on_overlay);
            for (int32_t node = run_start[best] + 1; node < run_start[best] + run_len[best]; node++) {
                int32_t cpus = avail_cpus(sim, node, job, on_overlay);
                if (cpus < fewest) {
                    fewest = cpus;
                    start = node;
                }
            }
        }
        /* keep the untaken runs in order from `taken` on: shift them right by one over `best` */
        for (int32_t r = best; r > taken; r--) {
            run_start[r] = run_start[r - 1];
            run_len[r] = run_len[r - 1];
            run_cpus[r] = run_cpus[r - 1];
        }
        /* the taken runs stay ordered by start (a few runs: insertion) */
        int32_t at = taken++;
        while (at > 0 && run_start[at - 1] > start) {
            run_start[at] = run_start[at - 1];
            run_len[at] = run_len[at - 1];
            at--;
        }
        run_start[at] = start;
        run_len[at] = take;
        found += take;
    }
    if (found < count) return found;
    found = 0;
    for (int32_t r = 0; r < taken; r++)
        for (int32_t k = 0; k < run_len[r]; k++) sim->node_scratch[found++] = run_start[r] + k;
    return found;
}

static void best_fit_free(void *state) {
    BestFit *fit = state;
    if (!fit) return;
    PyMem_RawFree(fit->run_start);
    PyMem_RawFree(fit->run_len);
    PyMem_RawFree(fit->run_cpus);
    PyMem_RawFree(fit);
}

static const GpSelectOps BEST_FIT = {best_fit_choose, 0};
static const GpHooks BEST_FIT_HOOKS = {.free = best_fit_free};

static int best_fit_setup(Sim *sim, GpSettings *settings) {
    (void)settings;
    BestFit *fit = PyMem_RawCalloc(1, sizeof(BestFit));
    if (fit) {
        fit->run_start = PyMem_RawCalloc((size_t)sim->total_nodes / 2 + 1, sizeof(int32_t));
        fit->run_len = PyMem_RawCalloc((size_t)sim->total_nodes / 2 + 1, sizeof(int32_t));
        fit->run_cpus = PyMem_RawCalloc((size_t)sim->total_nodes / 2 + 1, sizeof(int64_t));
    }
    if (!fit || !fit->run_start || !fit->run_len || !fit->run_cpus || gp_add_piece(sim, "select", &BEST_FIT_HOOKS, fit) < 0) {
        best_fit_free(fit);
        PyErr_NoMemory();
        return -1;
    }
    sim->select = &BEST_FIT;
    sim->select_state = fit;
    return 0;
}

static int32_t first_fit_choose(Sim *sim, void *state, const uint64_t *candidates, int32_t count, int32_t job,
                                int on_overlay) {
    (void)state;
    (void)job;
    (void)on_overlay;
    int32_t found = 0;
    for (int32_t w = 0; w < sim->n_words && found < count; w++)
        for (uint64_t b = candidates[w]; b && found < count; b &= b - 1)
            sim->node_scratch[found++] = 64 * w + __builtin_ctzll(b);
    return found;
}

static const GpSelectOps FIRST_FIT = {first_fit_choose, 1};

static int first_fit_setup(Sim *sim, GpSettings *settings) {
    (void)settings;
    sim->select = &FIRST_FIT;
    return 0;
}

const GpPlugin GP_SELECT_PLUGINS[] = {
    {"select/cons_tres", "best fit over runs of consecutive free nodes (job_test.c)", best_fit_setup},
    {"select/linear", "best fit over runs of consecutive free nodes (job_test.c)", best_fit_setup},
    {"select/first_fit", "the lowest-numbered free nodes (the scheduling literature's placement)", first_fit_setup},
    {NULL, NULL, NULL},
};
