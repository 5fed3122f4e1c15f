/*
 * Node choice for whole-node jobs (SelectType): which of the candidate nodes a job takes.
 *
 * - select/cons_tres and select/linear: Slurm's best fit (job_test.c:_eval_nodes for whole nodes):
 *   the candidates form runs of consecutive nodes; take the smallest run that holds the rest of the
 *   job (the first of equal ones), its lowest nodes; if none does, the largest run (the first of
 *   equal ones) whole, and repeat. With free nodes 0, 1, 5, 7 a 3-node job gets 0, 1, 5; with 0, 1,
 *   2, 4 a 1-node job gets 4. (Whether a job takes whole nodes or its GPUs only, the difference of
 *   the two plugins, is each job's GPUs per node, set on the Python side.)
 * - select/first_fit: the lowest-numbered candidates, the placement of the scheduling literature's
 *   simulators (for the textbook passes sched/builtin and sched/easy).
 */
#include <string.h>

#include "plugins.h"

typedef struct {
    int32_t *run_start, *run_len; /* runs of consecutive candidate nodes */
} BestFit;

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

static int32_t best_fit_choose(Sim *sim, void *state, const uint64_t *candidates, int32_t count) {
    BestFit *fit = state;
    int32_t *run_start = fit->run_start, *run_len = fit->run_len;
    int32_t runs = bit_runs(candidates, sim->n_words, run_start, run_len);
    int32_t found = 0, taken = 0; /* runs taken are moved to the front, as (start, nodes taken) */
    while (found < count) {
        int32_t want = count - found, best = -1;
        for (int32_t r = taken; r < runs; r++) {
            int32_t len = run_len[r];
            if (best < 0) {
                best = r;
                continue;
            }
            int32_t best_len = run_len[best];
            int enough = len >= want, best_enough = best_len >= want;
            if ((enough && (!best_enough || len < best_len)) || (!enough && !best_enough && len > best_len))
                best = r;
        }
        if (best < 0) break;
        int32_t start = run_start[best], take = run_len[best] < want ? run_len[best] : want;
        /* keep the untaken runs in order from `taken` on: shift them right by one over `best` */
        for (int32_t r = best; r > taken; r--) {
            run_start[r] = run_start[r - 1];
            run_len[r] = run_len[r - 1];
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
    }
    if (!fit || !fit->run_start || !fit->run_len || gp_add_piece(sim, "select", &BEST_FIT_HOOKS, fit) < 0) {
        best_fit_free(fit);
        PyErr_NoMemory();
        return -1;
    }
    sim->select = &BEST_FIT;
    sim->select_state = fit;
    return 0;
}

static int32_t first_fit_choose(Sim *sim, void *state, const uint64_t *candidates, int32_t count) {
    (void)state;
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
