/* The batch engine: events, cluster state and the queue. See engine.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <string.h>

#include "engine.h"

/* ---- memory ---------------------------------------------------------------------------- */

/* PyMem_Raw* is safe without the GIL and is seen by tracemalloc, so benchmarks count it. */
static void *xcalloc(Sim *sim, size_t count, size_t size) {
    void *p = PyMem_RawCalloc(count ? count : 1, size);
    if (!p) sim->out_of_memory = 1;
    return p;
}

int gp_sim_init(Sim *sim, int32_t n_jobs, int32_t total_nodes, int32_t node_gpus) {
    memset(sim, 0, sizeof(*sim));
    sim->n_jobs = n_jobs;
    sim->total_nodes = total_nodes;
    sim->node_gpus = node_gpus;
    sim->free_nodes = total_nodes;
    sim->n_words = (total_nodes + 63) / 64;
    sim->n_summary = (sim->n_words + 63) / 64;
    /* at most one running job per GPU */
    size_t max_running = (size_t)total_nodes * (size_t)node_gpus;
    sim->node_free = xcalloc(sim, (size_t)total_nodes, sizeof(int16_t));
    sim->count_ge = xcalloc(sim, (size_t)node_gpus + 1, sizeof(int32_t));
    sim->level_bits = xcalloc(sim, (size_t)node_gpus * (size_t)sim->n_words, sizeof(uint64_t));
    sim->level_summary = xcalloc(sim, (size_t)node_gpus * (size_t)sim->n_summary, sizeof(uint64_t));
    /* nodes found for a job, or the jobs found on one node */
    sim->node_scratch = xcalloc(sim, (size_t)total_nodes + (size_t)node_gpus, sizeof(int32_t));
    sim->ov_free = xcalloc(sim, (size_t)total_nodes, sizeof(int16_t));
    sim->ov_stamp = xcalloc(sim, (size_t)total_nodes, sizeof(uint32_t));
    sim->ov_count = xcalloc(sim, (size_t)node_gpus + 1, sizeof(int32_t));
    sim->run_start = xcalloc(sim, (size_t)total_nodes / 2 + 1, sizeof(int32_t));
    sim->run_len = xcalloc(sim, (size_t)total_nodes / 2 + 1, sizeof(int32_t));
    sim->q_job = xcalloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->q_nodes = xcalloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->q_estimate = xcalloc(sim, (size_t)n_jobs, sizeof(double));
    sim->end_cap = (int32_t)max_running + 16;
    sim->end_heap = xcalloc(sim, (size_t)sim->end_cap, sizeof(GpEvent));
    sim->end_time = xcalloc(sim, (size_t)n_jobs, sizeof(double));
    sim->q_cap = n_jobs;
    sim->est_heap = xcalloc(sim, max_running, sizeof(int32_t));
    sim->est_pos = xcalloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->est_end = xcalloc(sim, (size_t)n_jobs, sizeof(double));
    sim->walk_heap = xcalloc(sim, max_running + 1, sizeof(int32_t));
    sim->wake_at = INFINITY;
    sim->main_next_full = NAN;
    sim->ranges_cap = 1024;
    sim->ranges = xcalloc(sim, (size_t)sim->ranges_cap, 2 * sizeof(int32_t));
    if (sim->out_of_memory) return -1;
    for (int32_t g = 1; g <= node_gpus; g++) {
        uint64_t *bits = sim->level_bits + (size_t)(g - 1) * sim->n_words;
        uint64_t *summary = sim->level_summary + (size_t)(g - 1) * sim->n_summary;
        for (int32_t w = 0; w < sim->n_words; w++) {
            int32_t left = total_nodes - 64 * w;
            bits[w] = left >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << left) - 1);
            summary[w >> 6] |= UINT64_C(1) << (w & 63);
        }
    }
    for (int32_t node = 0; node < total_nodes; node++) sim->node_free[node] = (int16_t)node_gpus;
    for (int32_t g = 0; g <= node_gpus; g++) sim->count_ge[g] = total_nodes;
    return 0;
}

void gp_sim_free(Sim *sim) {
    PyMem_RawFree(sim->node_free);
    PyMem_RawFree(sim->count_ge);
    PyMem_RawFree(sim->level_bits);
    PyMem_RawFree(sim->level_summary);
    PyMem_RawFree(sim->node_scratch);
    PyMem_RawFree(sim->ov_free);
    PyMem_RawFree(sim->ov_stamp);
    PyMem_RawFree(sim->ov_count);
    PyMem_RawFree(sim->run_start);
    PyMem_RawFree(sim->run_len);
    PyMem_RawFree(sim->map_begin);
    PyMem_RawFree(sim->map_end);
    PyMem_RawFree(sim->map_bits);
    PyMem_RawFree(sim->map_suffix);
    PyMem_RawFree(sim->bits_scratch);
    PyMem_RawFree(sim->run_order);
    PyMem_RawFree(sim->memo_nodes);
    PyMem_RawFree(sim->run_fresh);
    PyMem_RawFree(sim->run_mark);
    PyMem_RawFree(sim->free_list);
    PyMem_RawFree(sim->prune_scratch);
    PyMem_RawFree(sim->map_clear);
    PyMem_RawFree(sim->user_tested);
    PyMem_RawFree(sim->node_win_next);
    PyMem_RawFree(sim->node_off);
    PyMem_RawFree(sim->block_count);
    PyMem_RawFree(sim->block_nodes_scratch);
    PyMem_RawFree(sim->lent_stack);
    PyMem_RawFree(sim->evict_heap);
    PyMem_RawFree(sim->q_job);
    PyMem_RawFree(sim->q_nodes);
    PyMem_RawFree(sim->q_estimate);
    PyMem_RawFree(sim->end_heap);
    PyMem_RawFree(sim->requeue_heap);
    PyMem_RawFree(sim->end_time);
    PyMem_RawFree(sim->work_left);
    PyMem_RawFree(sim->attempt_start);
    PyMem_RawFree(sim->awaits_until);
    PyMem_RawFree(sim->vacating);
    PyMem_RawFree(sim->victim_scratch);
    PyMem_RawFree(sim->est_heap);
    PyMem_RawFree(sim->est_pos);
    PyMem_RawFree(sim->est_end);
    PyMem_RawFree(sim->walk_heap);
    PyMem_RawFree(sim->ranges);
    if (sim->prio_static) gp_priority_free(sim);
}

/* ---- heaps ----------------------------------------------------------------------------- */

static inline int event_less(GpEvent a, GpEvent b) {
    return a.time < b.time || (a.time == b.time && a.job < b.job);
}

/* Push onto a growable heap of events (the end events, or the requeued jobs). */
static void event_push(Sim *sim, GpEvent **heap, int32_t *len, int32_t *cap, GpEvent event) {
    if (*len == *cap) {
        int32_t grown_cap = *cap ? 2 * *cap : 64;
        GpEvent *grown = PyMem_RawRealloc(*heap, (size_t)grown_cap * sizeof(GpEvent));
        if (!grown) {
            sim->out_of_memory = 1;
            return;
        }
        *heap = grown;
        *cap = grown_cap;
    }
    GpEvent *h = *heap;
    int32_t i = (*len)++;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!event_less(event, h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = event;
}

static GpEvent event_pop(GpEvent *h, int32_t *len) {
    GpEvent top = h[0];
    GpEvent last = h[--*len];
    int32_t n = *len, i = 0;
    while (1) {
        int32_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && event_less(h[child + 1], h[child])) child++;
        if (!event_less(h[child], last)) break;
        h[i] = h[child];
        i = child;
    }
    if (n > 0) h[i] = last;
    return top;
}

/* Order of running jobs for backfill: estimated end, then job id (then index, for duplicates). */
static inline int est_less(const Sim *sim, int32_t a, int32_t b) {
    double ta = sim->est_end[a], tb = sim->est_end[b];
    if (ta != tb) return ta < tb;
    if (sim->job_id[a] != sim->job_id[b]) return sim->job_id[a] < sim->job_id[b];
    return a < b;
}

static void est_sift_up(Sim *sim, int32_t i, int32_t job) {
    int32_t *h = sim->est_heap;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!est_less(sim, job, h[parent])) break;
        h[i] = h[parent];
        sim->est_pos[h[i]] = i;
        i = parent;
    }
    h[i] = job;
    sim->est_pos[job] = i;
}

static void est_sift_down(Sim *sim, int32_t i, int32_t job) {
    int32_t *h = sim->est_heap;
    int32_t n = sim->est_len;
    while (1) {
        int32_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && est_less(sim, h[child + 1], h[child])) child++;
        if (!est_less(sim, h[child], job)) break;
        h[i] = h[child];
        sim->est_pos[h[i]] = i;
        i = child;
    }
    h[i] = job;
    sim->est_pos[job] = i;
}

static void est_remove(Sim *sim, int32_t job) {
    int32_t i = sim->est_pos[job];
    int32_t last = sim->est_heap[--sim->est_len];
    if (last == job) return;
    if (i > 0 && est_less(sim, last, sim->est_heap[(i - 1) / 2]))
        est_sift_up(sim, i, last);
    else
        est_sift_down(sim, i, last);
}

/* Best-first walk of the est heap: a second small heap holds the frontier of heap positions. */
static inline int walk_less(const Sim *sim, int32_t pa, int32_t pb) {
    return est_less(sim, sim->est_heap[pa], sim->est_heap[pb]);
}

static void walk_push(Sim *sim, int32_t pos) {
    int32_t *h = sim->walk_heap;
    int32_t i = sim->walk_len++;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!walk_less(sim, pos, h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = pos;
}

void gp_walk_begin(Sim *sim) {
    sim->walk_len = 0;
    if (sim->est_len > 0) walk_push(sim, 0);
}

int32_t gp_walk_next(Sim *sim) {
    if (sim->walk_len == 0) return -1;
    int32_t *h = sim->walk_heap;
    int32_t top = h[0];
    int32_t last = h[--sim->walk_len];
    int32_t n = sim->walk_len, i = 0;
    while (1) {
        int32_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && walk_less(sim, h[child + 1], h[child])) child++;
        if (!walk_less(sim, h[child], last)) break;
        h[i] = h[child];
        i = child;
    }
    if (n > 0) h[i] = last;
    if (2 * top + 1 < sim->est_len) walk_push(sim, 2 * top + 1);
    if (2 * top + 2 < sim->est_len) walk_push(sim, 2 * top + 2);
    return sim->est_heap[top];
}

/* ---- nodes ----------------------------------------------------------------------------- */

/* Append (first, count) to the ranges of the job whose ranges begin at `job_first`, extending
 * the job's last range when the new one continues it. */
static void push_range(Sim *sim, int64_t job_first, int32_t first, int32_t count) {
    if (sim->ranges_len > job_first) {
        int32_t *last = sim->ranges + 2 * (sim->ranges_len - 1);
        if (last[0] + last[1] == first) {
            last[1] += count;
            return;
        }
    }
    if (sim->ranges_len == sim->ranges_cap) {
        int64_t cap = 2 * sim->ranges_cap;
        int32_t *grown = PyMem_RawRealloc(sim->ranges, (size_t)cap * 2 * sizeof(int32_t));
        if (!grown) {
            sim->out_of_memory = 1;
            return;
        }
        sim->ranges = grown;
        sim->ranges_cap = cap;
    }
    sim->ranges[2 * sim->ranges_len] = first;
    sim->ranges[2 * sim->ranges_len + 1] = count;
    sim->ranges_len++;
}

/* Set a node's free GPUs, keeping the level bitmaps and counts. */
/* Move a node's bits and counts from level `old` to level `free` (what schedulers may use). */
static void node_levels(Sim *sim, int32_t node, int32_t old, int32_t free) {
    int32_t w = node >> 6;
    uint64_t bit = UINT64_C(1) << (node & 63), word_bit = UINT64_C(1) << (w & 63);
    for (int32_t g = free + 1; g <= old; g++) { /* levels the node leaves */
        uint64_t *bits = sim->level_bits + (size_t)(g - 1) * sim->n_words;
        bits[w] &= ~bit;
        if (bits[w] == 0) sim->level_summary[(size_t)(g - 1) * sim->n_summary + (w >> 6)] &= ~word_bit;
        sim->count_ge[g]--;
    }
    for (int32_t g = old + 1; g <= free; g++) { /* levels it joins */
        sim->level_bits[(size_t)(g - 1) * sim->n_words + w] |= bit;
        sim->level_summary[(size_t)(g - 1) * sim->n_summary + (w >> 6)] |= word_bit;
        sim->count_ge[g]++;
    }
    sim->free_nodes = sim->count_ge[sim->node_gpus];
}

/* Set a node's free GPUs, keeping the level bitmaps and counts; a node that is off shows none. */
static void node_set_free(Sim *sim, int32_t node, int32_t free) {
    if (!(sim->node_off && sim->node_off[node])) node_levels(sim, node, sim->node_free[node], free);
    sim->node_free[node] = (int16_t)free;
}

static void node_set_off(Sim *sim, int32_t node, int off) {
    if (sim->node_off[node] == off) return;
    int32_t free = sim->node_free[node];
    node_levels(sim, node, off ? free : 0, off ? 0 : free);
    sim->node_off[node] = (uint8_t)off;
}

/* Is `node` held, during the job's run [now, until), by a reservation the job may not use? */
static int window_blocks(Sim *sim, int32_t node, int32_t job, double now, double until) {
    int64_t first = sim->node_win_offsets[node], last = sim->node_win_offsets[node + 1];
    int64_t k = first + sim->node_win_next[node];
    while (k < last && sim->win_end[sim->node_win_ids[k]] <= now) { /* over: never looked at again */
        k++;
        sim->node_win_next[node]++;
    }
    for (; k < last; k++) {
        int32_t w = sim->node_win_ids[k];
        if (sim->win_start[w] >= until) break;
        int32_t account = sim->job_account[job];
        if (account < 0 || account > 63 || !((sim->win_accounts[w] >> account) & 1)) return 1;
    }
    return 0;
}

int gp_window_blocks_at(const Sim *sim, int32_t node, int32_t job, double from, double until) {
    int64_t last = sim->node_win_offsets[node + 1];
    for (int64_t k = sim->node_win_offsets[node] + sim->node_win_next[node]; k < last; k++) {
        int32_t w = sim->node_win_ids[k];
        if (sim->win_start[w] >= until) break;
        if (sim->win_end[w] <= from) continue;
        int32_t account = sim->job_account[job];
        if (account < 0 || account > 63 || !((sim->win_accounts[w] >> account) & 1)) return 1;
    }
    return 0;
}

static int int_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Of the `eligible` nodes in node_scratch (ascending), keep `count` by topology: all in the
 * best-fitting block, else from the blocks with the most eligible nodes; returns how many. */
static int32_t pick_by_block(Sim *sim, int32_t eligible, int32_t count) {
    int32_t blocks = (sim->total_nodes + sim->block_nodes - 1) / sim->block_nodes;
    memset(sim->block_count, 0, (size_t)blocks * sizeof(int32_t));
    for (int32_t k = 0; k < eligible; k++) sim->block_count[sim->node_scratch[k] / sim->block_nodes]++;
    int32_t best = -1;
    for (int32_t b = 0; b < blocks; b++)
        if (sim->block_count[b] >= count && (best < 0 || sim->block_count[b] < sim->block_count[best])) best = b;
    int32_t kept = 0;
    if (best >= 0) {
        for (int32_t k = 0; k < eligible && kept < count; k++)
            if (sim->node_scratch[k] / sim->block_nodes == best) sim->node_scratch[kept++] = sim->node_scratch[k];
        return kept;
    }
    if (sim->block_require && count <= sim->block_nodes) return 0; /* waits for one block */
    /* fewest blocks: the fullest blocks first (lowest-numbered on ties), each used up before the
     * next; the chosen blocks' eligible counts are marked negative */
    int32_t used = 0, *chosen = sim->block_count + blocks;
    int32_t n_chosen = 0;
    while (used < count) {
        int32_t pick = -1;
        for (int32_t b = 0; b < blocks; b++)
            if (sim->block_count[b] > 0 && (pick < 0 || sim->block_count[b] > sim->block_count[pick])) pick = b;
        used += sim->block_count[pick];
        sim->block_count[pick] = -1;
        chosen[n_chosen++] = pick;
    }
    int32_t *candidates = sim->block_nodes_scratch;
    memcpy(candidates, sim->node_scratch, (size_t)eligible * sizeof(int32_t));
    for (int32_t c = 0; c < n_chosen && kept < count; c++)
        for (int32_t k = 0; k < eligible && kept < count; k++)
            if (candidates[k] / sim->block_nodes == chosen[c]) sim->node_scratch[kept++] = candidates[k];
    qsort(sim->node_scratch, (size_t)kept, sizeof(int32_t), int_cmp);
    return kept;
}

int32_t gp_find_nodes(Sim *sim, int32_t job, double until) {
    int32_t count = sim->nodes[job], gpus = sim->gpn[job];
    const uint64_t *bits = sim->level_bits + (size_t)(gpus - 1) * sim->n_words;
    const uint64_t *summary = sim->level_summary + (size_t)(gpus - 1) * sim->n_summary;
    int by_block = sim->block_nodes > 0 && count > 1;
    int32_t want = by_block ? sim->total_nodes : count; /* with topology: every eligible node */
    int32_t found = 0;
    for (int32_t s = 0; s < sim->n_summary && found < want; s++) {
        for (uint64_t words = summary[s]; words && found < want; words &= words - 1) {
            int32_t w = 64 * s + __builtin_ctzll(words);
            for (uint64_t b = bits[w]; b && found < want; b &= b - 1) {
                int32_t node = 64 * w + __builtin_ctzll(b);
                if (sim->n_windows && window_blocks(sim, node, job, sim->now, until)) continue;
                sim->node_scratch[found++] = node;
            }
        }
    }
    if (by_block) return found < count ? found : pick_by_block(sim, found, count);
    return found;
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

/*
 * Best fit (job_test.c:_eval_nodes for whole nodes): the candidates form runs of consecutive
 * nodes; take the smallest run that holds the rest of the job (the first of equal ones), its
 * lowest nodes; if none does, the largest run (the first of equal ones) whole, and repeat.
 * With free nodes 0, 1, 5, 7 a 3-node job gets 0, 1, 5; with 0, 1, 2, 4 a 1-node job gets 4.
 */
static int32_t best_fit_nodes(Sim *sim, const uint64_t *candidates, int32_t count) {
    int32_t runs = bit_runs(candidates, sim->n_words, sim->run_start, sim->run_len);
    int32_t found = 0, taken = 0; /* runs taken are moved to the front, as (start, nodes taken) */
    while (found < count) {
        int32_t want = count - found, best = -1;
        for (int32_t r = taken; r < runs; r++) {
            int32_t len = sim->run_len[r];
            if (best < 0) {
                best = r;
                continue;
            }
            int32_t best_len = sim->run_len[best];
            int enough = len >= want, best_enough = best_len >= want;
            if ((enough && (!best_enough || len < best_len)) || (!enough && !best_enough && len > best_len))
                best = r;
        }
        if (best < 0) break;
        int32_t start = sim->run_start[best], take = sim->run_len[best] < want ? sim->run_len[best] : want;
        /* keep the untaken runs in order from `taken` on: shift them right by one over `best` */
        for (int32_t r = best; r > taken; r--) {
            sim->run_start[r] = sim->run_start[r - 1];
            sim->run_len[r] = sim->run_len[r - 1];
        }
        /* the taken runs stay ordered by start (a few runs: insertion) */
        int32_t at = taken++;
        while (at > 0 && sim->run_start[at - 1] > start) {
            sim->run_start[at] = sim->run_start[at - 1];
            sim->run_len[at] = sim->run_len[at - 1];
            at--;
        }
        sim->run_start[at] = start;
        sim->run_len[at] = take;
        found += take;
    }
    if (found < count) return found;
    found = 0;
    for (int32_t r = 0; r < taken; r++)
        for (int32_t k = 0; k < sim->run_len[r]; k++) sim->node_scratch[found++] = sim->run_start[r] + k;
    return found;
}

int32_t gp_choose_nodes(Sim *sim, const uint64_t *candidates, int32_t count) {
    if (sim->best_fit && !(sim->block_nodes && count > 1)) return best_fit_nodes(sim, candidates, count);
    int by_block = sim->block_nodes > 0 && count > 1;
    int32_t found = 0;
    for (int32_t w = 0; w < sim->n_words && (by_block || found < count); w++)
        for (uint64_t b = candidates[w]; b && (by_block || found < count); b &= b - 1)
            sim->node_scratch[found++] = 64 * w + __builtin_ctzll(b);
    if (by_block) return found < count ? found : pick_by_block(sim, found, count);
    return found;
}

/* Whole nodes [first, first + run) go from all GPUs free to none (take) or back (!take), a
 * 64-node word at a time on every level: what a whole-node job costs. */
static void whole_run(Sim *sim, int32_t first, int32_t run, int take) {
    for (int32_t g = 1; g <= sim->node_gpus; g++) {
        uint64_t *bits = sim->level_bits + (size_t)(g - 1) * sim->n_words;
        uint64_t *summary = sim->level_summary + (size_t)(g - 1) * sim->n_summary;
        for (int32_t node = first, left = run; left > 0;) {
            int32_t w = node >> 6, bit = node & 63;
            int32_t span = 64 - bit < left ? 64 - bit : left;
            uint64_t mask = (span == 64) ? ~UINT64_C(0) : (((UINT64_C(1) << span) - 1) << bit);
            if (take) {
                bits[w] &= ~mask;
                if (bits[w] == 0) summary[w >> 6] &= ~(UINT64_C(1) << (w & 63));
            } else {
                bits[w] |= mask;
                summary[w >> 6] |= UINT64_C(1) << (w & 63);
            }
            node += span;
            left -= span;
        }
        sim->count_ge[g] += take ? -run : run;
    }
    for (int32_t node = first; node < first + run; node++) sim->node_free[node] = (int16_t)(take ? 0 : sim->node_gpus);
    sim->free_nodes = sim->count_ge[sim->node_gpus];
}

/* Give the job `gpus` GPUs on each of the `count` nodes in node_scratch (ascending) and record
 * them as its ranges. */
static void take_nodes(Sim *sim, int32_t job, int32_t count, int32_t gpus) {
    int64_t job_first = sim->ranges_len;
    int whole = gpus == sim->node_gpus && !sim->node_off;
    for (int32_t k = 0; k < count && !sim->out_of_memory;) {
        int32_t node = sim->node_scratch[k], run = 1;
        if (whole)
            while (k + run < count && sim->node_scratch[k + run] == node + run) run++;
        if (whole)
            whole_run(sim, node, run, 1);
        else
            node_set_free(sim, node, sim->node_free[node] - gpus);
        push_range(sim, job_first, node, run);
        k += run;
    }
    sim->range_first[job] = job_first;
    sim->range_count[job] = (int32_t)(sim->ranges_len - job_first);
}

static void release_nodes(Sim *sim, int32_t job) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    int32_t gpus = sim->gpn[job];
    int whole = gpus == sim->node_gpus && !sim->node_off;
    for (int32_t k = 0; k < sim->range_count[job]; k++) {
        if (whole) {
            whole_run(sim, r[2 * k], r[2 * k + 1], 0);
            continue;
        }
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++)
            node_set_free(sim, node, sim->node_free[node] + gpus);
    }
}

/* ---- overlay ---------------------------------------------------------------------------- */

int gp_user_tests_reset(Sim *sim) {
    if (!sim->job_user) return 0;
    if (!sim->user_tested) sim->user_tested = xcalloc(sim, (size_t)sim->n_users, sizeof(int32_t));
    if (!sim->user_tested) return -1;
    memset(sim->user_tested, 0, (size_t)sim->n_users * sizeof(int32_t));
    return 0;
}

void gp_overlay_begin(Sim *sim) {
    if (++sim->ov_epoch == 0) { /* wrapped: clear the stamps once every 2**32 plans */
        memset(sim->ov_stamp, 0, (size_t)sim->total_nodes * sizeof(uint32_t));
        sim->ov_epoch = 1;
    }
    memcpy(sim->ov_count, sim->count_ge, ((size_t)sim->node_gpus + 1) * sizeof(int32_t));
}

void gp_overlay_add(Sim *sim, int32_t node, int32_t gpus) {
    int32_t old = gp_overlay_free(sim, node), free = old + gpus;
    /* a node may go below 0 (preemption: a node put out of reach); ov_count counts from 0 */
    for (int32_t g = free + 1 > 0 ? free + 1 : 0; g <= old; g++) sim->ov_count[g]--;
    for (int32_t g = old + 1 > 0 ? old + 1 : 0; g <= free; g++) sim->ov_count[g]++;
    sim->ov_free[node] = (int16_t)free;
    sim->ov_stamp[node] = sim->ov_epoch;
}

void gp_overlay_add_job(Sim *sim, int32_t job, int32_t sign) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    int32_t gpus = sign * sim->gpn[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++)
            if (!(sim->node_off && sim->node_off[node])) /* a lent node's GPUs come back to no one */
                gp_overlay_add(sim, node, gpus);
}

/* ---- queue and job life cycle ------------------------------------------------------------ */

static void queue_compact(Sim *sim);

/* Queue slots are taken in arrival order. Every job arrives once, so n_jobs slots suffice unless
 * preempted jobs come back: then holes are closed first, and the slots grow if still full. */
static int queue_make_room(Sim *sim) {
    if (sim->q_count < sim->q_cap) return 0;
    if (sim->q_holes > 0 || sim->q_first > 0) queue_compact(sim);
    if (sim->q_count < sim->q_cap) return 0;
    int32_t cap = 2 * sim->q_cap + 16;
    int32_t *job = PyMem_RawRealloc(sim->q_job, (size_t)cap * sizeof(int32_t));
    if (job) sim->q_job = job;
    int32_t *nodes = PyMem_RawRealloc(sim->q_nodes, (size_t)cap * sizeof(int32_t));
    if (nodes) sim->q_nodes = nodes;
    double *estimate = PyMem_RawRealloc(sim->q_estimate, (size_t)cap * sizeof(double));
    if (estimate) sim->q_estimate = estimate;
    if (!job || !nodes || !estimate) {
        sim->out_of_memory = 1;
        return -1;
    }
    sim->q_cap = cap;
    return 0;
}

static void queue_append(Sim *sim, int32_t job) {
    if (queue_make_room(sim) < 0) return;
    sim->q_job[sim->q_count] = job;
    sim->q_nodes[sim->q_count] = sim->nodes[job];
    sim->q_estimate[sim->q_count] = sim->estimate[job];
    sim->q_count++;
    sim->q_len++;
    if (sim->prio_static) gp_priority_insert(sim, sim->q_count - 1);
}

/* Close the holes left by started jobs, keeping queue order. */
static void queue_compact(Sim *sim) {
    int32_t kept = 0;
    for (int32_t s = sim->q_first; s < sim->q_count; s++) {
        if (sim->q_nodes[s] == GP_GONE) continue;
        sim->q_job[kept] = sim->q_job[s];
        sim->q_nodes[kept] = sim->q_nodes[s];
        sim->q_estimate[kept] = sim->q_estimate[s];
        kept++;
    }
    sim->q_first = 0;
    sim->q_count = kept;
    sim->q_holes = 0;
}

/* Take the `count` lowest-numbered wholly free nodes for `job`, a run of consecutive free nodes
 * at a time (the common case of whole-node jobs, with no reservation or lending to check). */
static void take_whole_lowest(Sim *sim, int32_t job, int32_t count) {
    const uint64_t *bits = sim->level_bits + (size_t)(sim->node_gpus - 1) * sim->n_words;
    const uint64_t *summary = sim->level_summary + (size_t)(sim->node_gpus - 1) * sim->n_summary;
    int64_t job_first = sim->ranges_len;
    int32_t s = 0;
    while (count > 0 && !sim->out_of_memory) {
        while (summary[s] == 0) s++;
        int32_t w = 64 * s + __builtin_ctzll(summary[s]);
        uint64_t b = bits[w];
        int32_t low = __builtin_ctzll(b);
        uint64_t from_low = b >> low;
        int32_t run = (~from_low == 0) ? 64 - low : __builtin_ctzll(~from_low);
        if (run > count) run = count;
        whole_run(sim, 64 * w + low, run, 1); /* clears these bits, so the next look finds the rest */
        push_range(sim, job_first, 64 * w + low, run);
        count -= run;
    }
    sim->range_first[job] = job_first;
    sim->range_count[job] = (int32_t)(sim->ranges_len - job_first);
}

static void start_job(Sim *sim, int32_t slot, double now, int whole_lowest);

void gp_start_slot(Sim *sim, int32_t slot, double now) {
    int32_t job = sim->q_job[slot];
    int whole_lowest = sim->gpn[job] == sim->node_gpus && !sim->n_windows && !sim->node_off &&
                       !(sim->block_nodes && sim->nodes[job] > 1);
    int32_t found;
    if (whole_lowest && sim->best_fit) {
        found = gp_choose_nodes(sim, gp_free_bits(sim), sim->nodes[job]);
        whole_lowest = 0; /* start on node_scratch */
    } else {
        found = whole_lowest ? sim->free_nodes : gp_find_nodes(sim, job, now + sim->estimate[job]);
    }
    if (found < sim->nodes[job]) {
        sim->policy_error = 1; /* a policy bug: refuse rather than corrupt state */
        return;
    }
    start_job(sim, slot, now, whole_lowest);
}

void gp_start_slot_on(Sim *sim, int32_t slot, double now) { start_job(sim, slot, now, 0); }

/* Start the job in `slot`: on the lowest wholly free nodes, or on the nodes in node_scratch. */
static void start_job(Sim *sim, int32_t slot, double now, int whole_lowest) {
    int32_t job = sim->q_job[slot];
    sim->q_nodes[slot] = GP_GONE;
    sim->q_len--;
    sim->q_holes++;
    if (sim->prio_static) gp_priority_started(sim, job, +1);
    if (sim->limit_group) {
        int32_t group = sim->limit_group[job];
        sim->group_gpus[group] += sim->gpus[job];
        sim->group_jobs[group] += 1;
        sim->qos_gpus[sim->group_qos[group]] += sim->gpus[job];
    }
    if (isnan(sim->start[job])) sim->start[job] = now; /* a requeued job keeps its first start */
    sim->busy_gpus += sim->gpus[job];
    if (whole_lowest)
        take_whole_lowest(sim, job, sim->nodes[job]);
    else
        take_nodes(sim, job, sim->nodes[job], sim->gpn[job]);
    double run = sim->run[job];
    if (sim->preempt_class) {
        run = sim->work_left[job];
        sim->attempt_start[job] = now;
        sim->awaits_until[job] = -INFINITY;
    }
    sim->end_time[job] = now + run;
    event_push(sim, &sim->end_heap, &sim->end_len, &sim->end_cap, (GpEvent){now + run, job});
    sim->est_end[job] = now + sim->estimate[job];
    sim->est_len++;
    est_sift_up(sim, sim->est_len - 1, job);
}

static void end_job(Sim *sim, int32_t job) {
    if (sim->prio_static) gp_priority_started(sim, job, -1);
    if (sim->limit_group) {
        int32_t group = sim->limit_group[job];
        sim->group_gpus[group] -= sim->gpus[job];
        sim->group_jobs[group] -= 1;
        sim->qos_gpus[sim->group_qos[group]] -= sim->gpus[job];
    }
    sim->busy_gpus -= sim->gpus[job];
    release_nodes(sim, job);
    est_remove(sim, job);
    sim->sched_requests++; /* epilog complete: agent.c queues the scheduler */
    if (sim->end_out) sim->end_out[job] = sim->now;
}

/* A preempted job leaves its nodes at `now` (after its GraceTime): cancelled, requeued (its work
 * since the last checkpoint lost), or suspended (resumed later with nothing lost). */
static void vacate(Sim *sim, int32_t job, double now, int mode) {
    end_job(sim, job);
    sim->end_time[job] = NAN; /* its pending end event is stale now */
    sim->vacating[job] = 0;
    sim->preemptions[job]++;
    double executed = now - sim->attempt_start[job];
    double gpus = (double)sim->gpus[job];
    if (mode == GP_PREEMPT_CANCEL) {
        sim->cancelled[job] = 1;
        sim->lost_gpu_s[job] += executed * gpus;
        return;
    }
    double saved = executed; /* SUSPEND: resumes where it stopped */
    double requeue_at = now;
    if (mode == GP_PREEMPT_REQUEUE) {
        double interval = sim->checkpoint_s[job];
        saved = interval > 0 ? floor(executed / interval) * interval : 0.0;
        requeue_at = now + sim->requeue_delay_s;
    }
    sim->lost_gpu_s[job] += (executed - saved) * gpus;
    sim->work_left[job] -= saved;
    if (sim->work_left[job] < 0) sim->work_left[job] = 0;
    event_push(sim, &sim->requeue_heap, &sim->requeue_len, &sim->requeue_cap, (GpEvent){requeue_at, job});
}

/* ---- preemption ------------------------------------------------------------------------ */

typedef struct {
    double key, start;
    int64_t job_id;
    int32_t job;
} Victim;

/* Slurm's candidate order: preempt_p_get_prio ascending (lower tier or QoS first, smaller jobs
 * first), then the youngest (latest start) first, then job id. */
static int victim_cmp(const void *pa, const void *pb) {
    const Victim *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->start != b->start) return a->start > b->start ? -1 : 1;
    return (a->job_id > b->job_id) - (a->job_id < b->job_id);
}

int gp_try_preempt(Sim *sim, int32_t slot, double now, const uint64_t *allowed) {
    int32_t job = sim->q_job[slot];
    int32_t cls = sim->preempt_class[job], n = sim->n_preempt_classes;
    if (sim->awaits_until[job] > now) return 0; /* its victims are still in their grace time */
    Victim *cand = sim->victim_scratch;
    int32_t count = 0;
    for (int32_t k = 0; k < sim->est_len; k++) {
        int32_t running = sim->est_heap[k];
        if (sim->vacating[running] || !sim->can_preempt[cls * n + sim->preempt_class[running]]) continue;
        cand[count++] = (Victim){sim->victim_key[running], sim->attempt_start[running], sim->job_id[running],
                                 running};
    }
    /* take candidates in order until the job would fit on what they free, then drop any taken
     * one that turned out not to be needed (a later, larger victim covers it) */
    qsort(cand, (size_t)count, sizeof(Victim), victim_cmp);
    int32_t gpus = sim->gpn[job], nodes = sim->q_nodes[slot], taken = 0;
    gp_overlay_begin(sim);
    /* a node it may not use stays short of GPUs whatever its victims free: one outside `allowed`,
     * or one an advance reservation holds during its run (as gp_fits_now would find) */
    double until = now + sim->q_estimate[slot];
    if (allowed || sim->n_windows)
        for (int32_t node = 0; node < sim->total_nodes; node++)
            if ((allowed && !(allowed[node >> 6] >> (node & 63) & 1)) ||
                (sim->n_windows && gp_window_blocks_at(sim, node, job, now, until)))
                gp_overlay_add(sim, node, -gp_overlay_free(sim, node) - sim->node_gpus - 1);
    while (taken < count && sim->ov_count[gpus] < nodes) gp_overlay_add_job(sim, cand[taken++].job, +1);
    if (sim->ov_count[gpus] < nodes) return 0;
    for (int32_t k = 0; k < taken; k++) {
        gp_overlay_add_job(sim, cand[k].job, -1);
        if (sim->ov_count[gpus] >= nodes)
            cand[k].job = -1;
        else
            gp_overlay_add_job(sim, cand[k].job, +1);
    }
    double wait_until = now;
    for (int32_t k = 0; k < taken; k++) {
        int32_t victim = cand[k].job;
        if (victim < 0) continue;
        double leave = now + sim->grace_s[sim->preempt_class[victim]];
        if (leave <= now) {
            vacate(sim, victim, now, sim->preempt_mode[sim->preempt_class[victim]]);
            continue;
        }
        sim->vacating[victim] = 1;
        if (leave < sim->end_time[victim]) { /* else it ends on its own before its grace is over */
            sim->end_time[victim] = leave;
            event_push(sim, &sim->end_heap, &sim->end_len, &sim->end_cap, (GpEvent){leave, victim});
            est_remove(sim, victim); /* the backfill plan sees it leave at the end of its grace */
            sim->est_end[victim] = leave;
            sim->est_len++;
            est_sift_up(sim, sim->est_len - 1, victim);
        }
        if (leave > wait_until) wait_until = leave;
    }
    if (wait_until > now) {
        sim->awaits_until[job] = wait_until;
        return 0;
    }
    return 1;
}

/* ---- lending ---------------------------------------------------------------------------- */

static int job_on_node(const Sim *sim, int32_t job, int32_t node) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        if (node >= r[2 * k] && node < r[2 * k] + r[2 * k + 1]) return 1;
    return 0;
}

static void lend_nodes(Sim *sim, int32_t count, double now) {
    for (int idle_pass = 1; idle_pass >= 0 && count > 0; idle_pass--)
        for (int32_t node = sim->total_nodes - 1; node >= 0 && count > 0; node--) {
            if (sim->node_off[node]) continue;
            int idle = sim->node_free[node] == sim->node_gpus;
            if (idle != idle_pass) continue;
            node_set_off(sim, node, 1);
            sim->lent_stack[sim->lent_len++] = node;
            count--;
            if (!idle)
                event_push(sim, &sim->evict_heap, &sim->evict_len, &sim->evict_cap,
                           (GpEvent){now + sim->drain_grace_s, node});
        }
}

/* The jobs still on a lent node after the grace time go back to the queue. */
static void evict_node(Sim *sim, int32_t node, double now) {
    if (!sim->node_off[node]) return; /* it came back in the meantime */
    int32_t *found = (int32_t *)sim->node_scratch, count = 0;
    for (int32_t k = 0; k < sim->est_len; k++)
        if (job_on_node(sim, sim->est_heap[k], node)) found[count++] = sim->est_heap[k];
    for (int32_t k = 0; k < count; k++) vacate(sim, found[k], now, GP_PREEMPT_REQUEUE);
}

int64_t gp_run(Sim *sim, SchedulePass pass, double *tl_time, int64_t *tl_busy_gpus,
               int32_t *tl_queued, int64_t tl_capacity) {
    int32_t next_arrival = 0;
    int64_t rows = 0, instants = 0;
    for (int32_t j = 0; j < sim->n_jobs; j++) sim->start[j] = NAN;
    /* a queued job may wait for a reservation to end with nothing running: go on while bounds remain;
     * or for the policy's own clock, while it says a wake-up may start one */
    while (next_arrival < sim->n_jobs || sim->end_len > 0 || sim->requeue_len > 0 ||
           (sim->q_len > 0 && (sim->next_bound < sim->n_bounds || sim->next_drain < sim->n_drains ||
                               (sim->wake_at < INFINITY && sim->policy_waits)))) {
        /* the next instant: the earliest job end, arrival, requeue or requested wake-up */
        double now = INFINITY;
        if (sim->end_len > 0 && sim->end_heap[0].time < now) now = sim->end_heap[0].time;
        if (next_arrival < sim->n_jobs && sim->submit[next_arrival] < now) now = sim->submit[next_arrival];
        if (sim->requeue_len > 0 && sim->requeue_heap[0].time < now) now = sim->requeue_heap[0].time;
        if (sim->next_drain < sim->n_drains && sim->drain_time[sim->next_drain] < now)
            now = sim->drain_time[sim->next_drain];
        if (sim->evict_len > 0 && sim->evict_heap[0].time < now) now = sim->evict_heap[0].time;
        while (sim->next_bound < sim->n_bounds && sim->win_bounds[sim->next_bound] <= sim->now)
            sim->next_bound++; /* reservation bounds already served */
        if (sim->next_bound < sim->n_bounds && sim->win_bounds[sim->next_bound] < now)
            now = sim->win_bounds[sim->next_bound];
        if (now <= sim->wake_at) sim->events++; /* not a wake-up alone */
        if (sim->wake_at < now) now = sim->wake_at;
        if (now >= sim->wake_at) sim->wake_at = INFINITY; /* this instant serves the wake-up */
        sim->now = now;
        /* Ctrl-C and SIGTERM reach Python only between bytecodes: look every few thousand
         * instants, so a long run stops within a fraction of a second (KeyboardInterrupt) */
        if ((++instants & GP_SIGNAL_CHECK_MASK) == 0) {
            PyGILState_STATE gil = PyGILState_Ensure();
            int signalled = PyErr_CheckSignals();
            PyGILState_Release(gil);
            if (signalled) {
                sim->hook_error = 1;
                return -3;
            }
        }
        /* 0. priorities: usage up to now, and the periodic recalculation when due */
        if (sim->prio_static && gp_priority_instant(sim, now) < 0) return sim->hook_error ? -3 : -1;
        /* 1. all ends at this instant (skipping events a preemption made stale) */
        while (sim->end_len > 0 && sim->end_heap[0].time <= now) {
            GpEvent event = event_pop(sim->end_heap, &sim->end_len);
            if (event.time != sim->end_time[event.job]) continue;
            sim->end_time[event.job] = NAN; /* not running */
            if (sim->preempt_class && sim->vacating[event.job] && event.time < sim->attempt_start[event.job] +
                                                                                     sim->work_left[event.job])
                vacate(sim, event.job, now, sim->preempt_mode[sim->preempt_class[event.job]]);
            else
                end_job(sim, event.job);
        }
        /* 2. all arrivals, then the requeued jobs due */
        for (; next_arrival < sim->n_jobs && sim->submit[next_arrival] <= now; next_arrival++) {
            if (!(sim->quiet_arrival && sim->quiet_arrival[next_arrival])) sim->sched_requests++;
            queue_append(sim, next_arrival);
        }
        while (sim->requeue_len > 0 && sim->requeue_heap[0].time <= now)
            queue_append(sim, event_pop(sim->requeue_heap, &sim->requeue_len).job);
        /* 3. nodes lent and returned, and jobs evicted from lent nodes */
        for (; sim->next_drain < sim->n_drains && sim->drain_time[sim->next_drain] <= now; sim->next_drain++) {
            int32_t delta = sim->drain_delta[sim->next_drain];
            if (delta > 0) lend_nodes(sim, delta, now);
            for (; delta < 0 && sim->lent_len > 0; delta++) {
                node_set_off(sim, sim->lent_stack[--sim->lent_len], 0);
                sim->sched_requests++; /* a node resumed */
            }
        }
        while (sim->evict_len > 0 && sim->evict_heap[0].time <= now)
            evict_node(sim, event_pop(sim->evict_heap, &sim->evict_len).job, now);
        /* 4. one scheduling pass */
        pass(sim, now);
        if (sim->out_of_memory) return -1;
        if (sim->policy_error) return -2;
        if (sim->prio_static && (sim->q_len > 0 || sim->end_len > 0)) gp_wake_at(sim, sim->next_recalc);
        if (sim->q_holes > 64 && sim->q_holes > sim->q_len) queue_compact(sim);
        if (rows == 0 || tl_busy_gpus[rows - 1] != sim->busy_gpus || tl_queued[rows - 1] != sim->q_len) {
            if (rows == tl_capacity) return -4;
            tl_time[rows] = now;
            tl_busy_gpus[rows] = sim->busy_gpus;
            tl_queued[rows] = sim->q_len;
            rows++;
        }
    }
    return rows;
}
