/* The batch engine core: the clock, the event heaps, nodes and their GPUs, the queue and the running
 * set. The pieces it calls are in sim/slurm/_core. See engine.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <string.h>

#include "engine.h"

double *gp_progress_clock = NULL;

/* ---- memory ---------------------------------------------------------------------------- */

/* PyMem_Raw* is safe without the GIL and is seen by tracemalloc, so benchmarks count it. */
void *gp_calloc(Sim *sim, size_t count, size_t size) {
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
    sim->node_free = gp_calloc(sim, (size_t)total_nodes, sizeof(int16_t));
    sim->count_ge = gp_calloc(sim, (size_t)node_gpus + 1, sizeof(int32_t));
    sim->level_bits = gp_calloc(sim, (size_t)node_gpus * (size_t)sim->n_words, sizeof(uint64_t));
    sim->level_summary = gp_calloc(sim, (size_t)node_gpus * (size_t)sim->n_summary, sizeof(uint64_t));
    /* nodes found for a job, or the jobs found on one node */
    sim->node_scratch = gp_calloc(sim, (size_t)total_nodes + (size_t)node_gpus, sizeof(int32_t));
    sim->ov_free = gp_calloc(sim, (size_t)total_nodes, sizeof(int16_t));
    sim->ov_stamp = gp_calloc(sim, (size_t)total_nodes, sizeof(uint32_t));
    sim->ov_count = gp_calloc(sim, (size_t)node_gpus + 1, sizeof(int32_t));
    sim->q_job = gp_calloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->q_nodes = gp_calloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->q_estimate = gp_calloc(sim, (size_t)n_jobs, sizeof(double));
    sim->end_cap = (int32_t)max_running + 16;
    sim->end_heap = gp_calloc(sim, (size_t)sim->end_cap, sizeof(GpEvent));
    sim->end_time = gp_calloc(sim, (size_t)n_jobs, sizeof(double));
    sim->q_cap = n_jobs;
    sim->est_heap = gp_calloc(sim, max_running, sizeof(int32_t));
    sim->est_pos = gp_calloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->est_end = gp_calloc(sim, (size_t)n_jobs, sizeof(double));
    sim->walk_heap = gp_calloc(sim, max_running + 1, sizeof(int32_t));
    sim->wake_at = INFINITY;
    sim->ranges_cap = 1024;
    sim->ranges = gp_calloc(sim, (size_t)sim->ranges_cap, 2 * sizeof(int32_t));
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

int gp_add_piece(Sim *sim, const char *name, const GpHooks *hooks, void *state) {
    if (sim->n_pieces == GP_MAX_PIECES) return -1;
    sim->pieces[sim->n_pieces++] = (GpPiece){name, hooks, state};
    return 0;
}

void gp_queue_read(Sim *sim, double now) {
    for (int32_t k = 0; k < sim->n_pieces; k++)
        if (sim->pieces[k].hooks->queue_read) sim->pieces[k].hooks->queue_read(sim, sim->pieces[k].state, now);
}

int gp_enable_restarts(Sim *sim, const double *attempt_run) {
    sim->attempt_start = gp_calloc(sim, (size_t)sim->n_jobs, sizeof(double));
    sim->attempt_run = attempt_run;
    return sim->attempt_start ? 0 : -1;
}

int gp_enable_cpus(Sim *sim, int32_t node_cpus, int32_t node_mem, const int32_t *cpus, const int32_t *cpu_step,
                   const int32_t *mem, uint8_t *held_by) {
    sim->held_by = held_by;
    sim->node_cpus = node_cpus;
    sim->node_mem = node_mem;
    sim->job_cpus = cpus;
    sim->job_cpu_step = cpu_step;
    sim->job_mem = mem;
    sim->cpu_free = gp_calloc(sim, (size_t)sim->total_nodes, sizeof(int32_t));
    sim->mem_free = gp_calloc(sim, (size_t)sim->total_nodes, sizeof(int32_t));
    sim->ov_cpu = gp_calloc(sim, (size_t)sim->total_nodes, sizeof(int32_t));
    sim->ov_mem = gp_calloc(sim, (size_t)sim->total_nodes, sizeof(int32_t));
    sim->usable_scratch = gp_calloc(sim, (size_t)sim->n_words, sizeof(uint64_t));
    if (sim->out_of_memory) return -1;
    for (int32_t node = 0; node < sim->total_nodes; node++) {
        sim->cpu_free[node] = node_cpus;
        sim->mem_free[node] = node_mem;
    }
    /* CPUs or memory bind when a job's share of a node's CPUs or memory is larger than its share of
     * the node's GPUs: otherwise a node with g free GPUs has at least g GPUs' share of each free */
    for (int32_t j = 0; j < sim->n_jobs; j++) {
        if (sim->gpn[j] >= sim->node_gpus) continue;
        if ((int64_t)cpus[j] * sim->node_gpus > (int64_t)sim->gpn[j] * node_cpus ||
            (int64_t)mem[j] * sim->node_gpus > (int64_t)sim->gpn[j] * node_mem)
            sim->res_binds = 1;
    }
    return 0;
}

int gp_enable_node_off(Sim *sim) {
    if (!sim->node_off) sim->node_off = gp_calloc(sim, (size_t)sim->total_nodes, 1);
    return sim->node_off ? 0 : -1;
}

int gp_enable_power(Sim *sim) {
    if (sim->power_down) return 0;
    sim->power_down = gp_calloc(sim, (size_t)sim->n_words, sizeof(uint64_t));
    sim->power_scratch = gp_calloc(sim, (size_t)sim->n_words, sizeof(uint64_t));
    sim->power_nodes = gp_calloc(sim, (size_t)sim->total_nodes, sizeof(int32_t));
    return sim->out_of_memory ? -1 : 0;
}

void gp_sim_free(Sim *sim) {
    for (int32_t k = sim->n_pieces - 1; k >= 0; k--)
        if (sim->pieces[k].hooks->free) sim->pieces[k].hooks->free(sim->pieces[k].state);
    if (sim->sched && sim->sched->free) sim->sched->free(sim->sched_state);
    PyMem_RawFree(sim->node_free);
    PyMem_RawFree(sim->node_off);
    PyMem_RawFree(sim->power_down);
    PyMem_RawFree(sim->power_scratch);
    PyMem_RawFree(sim->power_nodes);
    PyMem_RawFree(sim->count_ge);
    PyMem_RawFree(sim->level_bits);
    PyMem_RawFree(sim->level_summary);
    PyMem_RawFree(sim->node_scratch);
    PyMem_RawFree(sim->ov_free);
    PyMem_RawFree(sim->ov_stamp);
    PyMem_RawFree(sim->cpu_free);
    PyMem_RawFree(sim->mem_free);
    PyMem_RawFree(sim->ov_cpu);
    PyMem_RawFree(sim->ov_mem);
    PyMem_RawFree(sim->usable_scratch);
    PyMem_RawFree(sim->ov_count);
    PyMem_RawFree(sim->q_job);
    PyMem_RawFree(sim->q_nodes);
    PyMem_RawFree(sim->q_estimate);
    PyMem_RawFree(sim->end_heap);
    PyMem_RawFree(sim->requeue_heap);
    PyMem_RawFree(sim->end_time);
    PyMem_RawFree(sim->attempt_start);
    PyMem_RawFree(sim->est_heap);
    PyMem_RawFree(sim->est_pos);
    PyMem_RawFree(sim->est_end);
    PyMem_RawFree(sim->walk_heap);
    PyMem_RawFree(sim->ranges);
}

/* ---- heaps ----------------------------------------------------------------------------- */

static inline int event_less(GpEvent a, GpEvent b) {
    return a.time < b.time || (a.time == b.time && a.job < b.job);
}

/* Push onto a growable heap of events (the end events, or the requeued jobs). */
void gp_event_push(Sim *sim, GpEvent **heap, int32_t *len, int32_t *cap, GpEvent event) {
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

GpEvent gp_event_pop(GpEvent *h, int32_t *len) {
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

void gp_node_set_off(Sim *sim, int32_t node, int off) {
    if (sim->node_off[node] == off) return;
    int32_t free = sim->node_free[node];
    node_levels(sim, node, off ? free : 0, off ? 0 : free);
    sim->node_off[node] = (uint8_t)off;
    sim->state_version++;
}

const uint64_t *gp_usable_bits(Sim *sim, int32_t job) {
    const uint64_t *gpu_level = gp_level_bits(sim, sim->gpn[job]);
    if (!gp_res_binds(sim, job)) return gpu_level;
    uint64_t *usable = sim->usable_scratch;
    for (int32_t w = 0; w < sim->n_words; w++) {
        usable[w] = gpu_level[w];
        for (uint64_t b = gpu_level[w]; b; b &= b - 1) {
            int32_t node = 64 * w + __builtin_ctzll(b);
            if (!gp_node_fits(sim, node, job)) usable[w] &= ~(UINT64_C(1) << (node & 63));
        }
    }
    return usable;
}

/* ---- nodes up first (power saving) ------------------------------------------------------- */

/* Merge the ascending node_scratch[0, have) and other[0, n_other) into node_scratch, ascending
 * (from the end, so in place). */
static void merge_into_scratch(Sim *sim, int32_t have, const int32_t *other, int32_t n_other) {
    int32_t *out = sim->node_scratch;
    for (int32_t i = have - 1, j = n_other - 1, k = have + n_other - 1; j >= 0; k--)
        out[k] = i >= 0 && out[i] > other[j] ? out[i--] : other[j--];
}

/* The select piece's choice of `count` of the `candidates`: those that are up when they are
 * enough, else all of them and the rest of the job on powered-down nodes (power_down). */
static int32_t select_choose(Sim *sim, const uint64_t *candidates, int32_t count, int32_t job, int on_overlay) {
    const GpSelectOps *select = sim->select;
    if (!sim->power_down) return select->choose(sim, sim->select_state, candidates, count, job, on_overlay);
    uint64_t *part = sim->power_scratch;
    int32_t up = 0;
    for (int32_t w = 0; w < sim->n_words; w++) {
        part[w] = candidates[w] & ~sim->power_down[w];
        up += __builtin_popcountll(part[w]);
    }
    if (up >= count) return select->choose(sim, sim->select_state, part, count, job, on_overlay);
    if (up == 0) return select->choose(sim, sim->select_state, candidates, count, job, on_overlay);
    int32_t *up_nodes = sim->power_nodes, n_up = 0;
    for (int32_t w = 0; w < sim->n_words; w++) {
        for (uint64_t b = part[w]; b; b &= b - 1) up_nodes[n_up++] = 64 * w + __builtin_ctzll(b);
        part[w] = candidates[w] & sim->power_down[w];
    }
    int32_t found = select->choose(sim, sim->select_state, part, count - up, job, on_overlay);
    if (found < count - up) return up + found;
    merge_into_scratch(sim, found, up_nodes, up);
    return count;
}

/* Of the `found` nodes in node_scratch (ascending), the `count` lowest-numbered that are up, and
 * the lowest-numbered powered-down ones after them, ascending. */
static int32_t lowest_up_first(Sim *sim, int32_t found, int32_t count) {
    if (found <= count) return found;
    int32_t *down = sim->power_nodes, up = 0, n_down = 0;
    for (int32_t k = 0; k < found; k++) {
        int32_t node = sim->node_scratch[k];
        if (gp_powered_down(sim, node))
            down[n_down++] = node;
        else
            sim->node_scratch[up++] = node;
    }
    if (up < count) merge_into_scratch(sim, up, down, count - up);
    return count;
}

/* Topology's pick of `count` of the `eligible` nodes in node_scratch: among those up when it
 * finds a place there, else among all. */
static int32_t place_pick(Sim *sim, int32_t eligible, int32_t count) {
    if (eligible < count) return eligible;
    if (sim->power_down) {
        int32_t *all = sim->power_nodes, up = 0;
        memcpy(all, sim->node_scratch, (size_t)eligible * sizeof(int32_t));
        for (int32_t k = 0; k < eligible; k++)
            if (!gp_powered_down(sim, all[k])) sim->node_scratch[up++] = all[k];
        if (up >= count && sim->place->pick(sim, sim->place_state, up, count) == count) return count;
        memcpy(sim->node_scratch, all, (size_t)eligible * sizeof(int32_t));
    }
    return sim->place->pick(sim, sim->place_state, eligible, count);
}

int32_t gp_find_nodes(Sim *sim, int32_t job, double until) {
    int32_t count = sim->nodes[job], gpus = sim->gpn[job];
    const uint64_t *summary = sim->level_summary + (size_t)(gpus - 1) * sim->n_summary;
    int by_group = sim->place && count > 1;
    /* Slurm's select chooses among all the nodes the job fits (a job on whole GPUs: among idle
     * nodes, gp_start_slot); a select that takes the lowest-numbered stops at `count` */
    int by_select = !by_group && gp_counts_res(sim, job) && !sim->select->lowest_numbered;
    const uint64_t *bits = by_select ? gp_usable_bits(sim, job) : gp_level_bits(sim, gpus);
    const GpHoldOps *hold = sim->hold;
    if (by_select && !hold) return select_choose(sim, bits, count, job, 0);
    /* with nodes powered down, the lowest-numbered nodes up go first: every candidate is needed */
    int32_t want = by_group || by_select || sim->power_down ? sim->total_nodes : count;
    int32_t found = 0;
    int check_res = gp_res_binds(sim, job) && !by_select; /* by_select: `bits` holds only fitting nodes */
    for (int32_t s = 0; s < sim->n_summary && found < want; s++) {
        for (uint64_t words = summary[s]; words && found < want; words &= words - 1) {
            int32_t w = 64 * s + __builtin_ctzll(words);
            for (uint64_t b = bits[w]; b && found < want; b &= b - 1) {
                int32_t node = 64 * w + __builtin_ctzll(b);
                if (check_res && !gp_node_fits(sim, node, job)) continue;
                if (hold && hold->held(sim, sim->hold_state, node, job, sim->now, until)) continue;
                sim->node_scratch[found++] = node;
            }
        }
    }
    if (by_group) return place_pick(sim, found, count);
    if (!by_select) return sim->power_down ? lowest_up_first(sim, found, count) : found;
    if (found < count) return found;
    /* the nodes found, as candidates for the select piece */
    uint64_t *candidates = sim->usable_scratch;
    memset(candidates, 0, (size_t)sim->n_words * sizeof(uint64_t));
    for (int32_t k = 0; k < found; k++)
        candidates[sim->node_scratch[k] >> 6] |= UINT64_C(1) << (sim->node_scratch[k] & 63);
    return select_choose(sim, candidates, count, job, 0);
}

void gp_note_held(Sim *sim, int32_t job, double until) {
    int32_t nodes = sim->nodes[job], with_gpus = 0, with_cpus = 0;
    const uint64_t *bits = gp_level_bits(sim, sim->gpn[job]);
    for (int32_t w = 0; w < sim->n_words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1) {
            int32_t node = 64 * w + __builtin_ctzll(b);
            if (sim->hold && sim->hold->held(sim, sim->hold_state, node, job, sim->now, until)) continue;
            with_gpus++;
            with_cpus += sim->cpu_free[node] >= sim->job_cpus[job];
        }
    if (with_gpus < nodes || !sim->held_by) return; /* its GPUs were short too (or a reservation held them) */
    sim->held_by[job] = with_cpus < nodes ? GP_HELD_BY_CPUS : GP_HELD_BY_MEMORY;
}

int32_t gp_choose_nodes(Sim *sim, const uint64_t *candidates, int32_t count, int32_t job, int on_overlay) {
    if (!(sim->place && count > 1)) return select_choose(sim, candidates, count, job, on_overlay);
    int32_t found = 0; /* topology: every candidate, then the groups decide */
    for (int32_t w = 0; w < sim->n_words; w++)
        for (uint64_t b = candidates[w]; b; b &= b - 1) sim->node_scratch[found++] = 64 * w + __builtin_ctzll(b);
    return place_pick(sim, found, count);
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
        if (whole) {
            whole_run(sim, node, run, 1);
        } else {
            node_set_free(sim, node, sim->node_free[node] - gpus);
            if (gp_counts_res(sim, job)) {
                sim->cpu_free[node] -= sim->job_cpus[job];
                sim->mem_free[node] -= sim->job_mem[job];
            }
        }
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
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++) {
            node_set_free(sim, node, sim->node_free[node] + gpus);
            if (gp_counts_res(sim, job)) {
                sim->cpu_free[node] += sim->job_cpus[job];
                sim->mem_free[node] += sim->job_mem[job];
            }
        }
    }
}

/* ---- overlay ---------------------------------------------------------------------------- */

void gp_overlay_begin(Sim *sim, int levels) {
    if (++sim->ov_epoch == 0) { /* wrapped: clear the stamps once every 2**32 plans */
        memset(sim->ov_stamp, 0, (size_t)sim->total_nodes * sizeof(uint32_t));
        sim->ov_epoch = 1;
    }
    sim->ov_levels = levels;
    if (levels) memcpy(sim->ov_count, sim->count_ge, ((size_t)sim->node_gpus + 1) * sizeof(int32_t));
}

void gp_overlay_add_job(Sim *sim, int32_t job, int32_t sign) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    int counted = gp_counts_res(sim, job);
    int32_t gpus = sign * sim->gpn[job], cpus = counted ? sign * sim->job_cpus[job] : 0;
    int32_t mem = counted ? sign * sim->job_mem[job] : 0;
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++)
            if (!(sim->node_off && sim->node_off[node])) /* a lent node's GPUs come back to no one */
                gp_overlay_add(sim, node, gpus, cpus, mem);
}

int32_t gp_overlay_fit_count(Sim *sim, int32_t job) {
    if (sim->ov_levels && !gp_res_binds(sim, job)) return sim->ov_count[sim->gpn[job]];
    int32_t count = 0;
    for (int32_t node = 0; node < sim->total_nodes; node++) count += gp_overlay_fits(sim, node, job);
    return count;
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
    sim->state_version++;
    for (int32_t k = 0; k < sim->n_pieces; k++)
        if (sim->pieces[k].hooks->job_queued)
            sim->pieces[k].hooks->job_queued(sim, sim->pieces[k].state, sim->q_count - 1);
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
    int whole_lowest = sim->gpn[job] == sim->node_gpus && !sim->hold && !sim->node_off && !sim->power_down &&
                       !(sim->place && sim->nodes[job] > 1);
    int32_t found;
    if (whole_lowest && !sim->select->lowest_numbered) {
        found = gp_choose_nodes(sim, gp_free_bits(sim), sim->nodes[job], job, 0);
        whole_lowest = 0; /* start on node_scratch */
    } else {
        found = whole_lowest ? sim->free_nodes : gp_find_nodes(sim, job, now + sim->estimate[job]);
    }
    if (found < sim->nodes[job]) {
        sim->policy_error = 1; /* a pass bug: refuse rather than corrupt state */
        return;
    }
    start_job(sim, slot, now, whole_lowest);
}

void gp_start_slot_on(Sim *sim, int32_t slot, double now) { start_job(sim, slot, now, 0); }

/* Start the job in `slot`: on the lowest wholly free nodes, or on the nodes in node_scratch. */
static void start_job(Sim *sim, int32_t slot, double now, int whole_lowest) {
    int32_t job = sim->q_job[slot];
    sim->q_nodes[slot] = GP_GONE;
    sim->state_version++;
    sim->q_len--;
    sim->q_holes++;
    for (int32_t k = 0; k < sim->n_pieces; k++)
        if (sim->pieces[k].hooks->job_started) sim->pieces[k].hooks->job_started(sim, sim->pieces[k].state, job, now);
    sim->busy_gpus += sim->gpus[job];
    if (sim->job_cpus) {
        sim->busy_cpus += (int64_t)sim->job_cpus[job] * sim->nodes[job];
        sim->busy_mem += (int64_t)sim->job_mem[job] * sim->nodes[job];
    }
    if (whole_lowest)
        take_whole_lowest(sim, job, sim->nodes[job]);
    else
        take_nodes(sim, job, sim->nodes[job], sim->gpn[job]);
    /* it runs when its nodes are up (a piece's start_delay: nodes booting) */
    double runs_from = now;
    for (int32_t k = 0; k < sim->n_pieces; k++)
        if (sim->pieces[k].hooks->start_delay) {
            double at = now + sim->pieces[k].hooks->start_delay(sim, sim->pieces[k].state, job, now);
            if (at > runs_from) runs_from = at;
        }
    if (isnan(sim->start[job]))
        sim->start[job] = runs_from;
    else /* a requeued job keeps its first start; it runs again, with a new planned end */
        sim->ends_moved++;
    double run = sim->attempt_run[job];
    if (sim->attempt_start) sim->attempt_start[job] = runs_from;
    sim->end_time[job] = runs_from + run;
    gp_event_push(sim, &sim->end_heap, &sim->end_len, &sim->end_cap, (GpEvent){runs_from + run, job});
    /* Slurm stamps a start with time(NULL), whole seconds, and plans its end a time limit later
     * (node_scheduler.c:select_nodes, job_mgr.c:job_end_time_reset) */
    sim->est_end[job] = floor(runs_from) + sim->estimate[job];
    sim->est_len++;
    est_sift_up(sim, sim->est_len - 1, job);
}

void gp_job_leave(Sim *sim, int32_t job) {
    for (int32_t k = 0; k < sim->n_pieces; k++)
        if (sim->pieces[k].hooks->job_ended) sim->pieces[k].hooks->job_ended(sim, sim->pieces[k].state, job);
    sim->busy_gpus -= sim->gpus[job];
    if (sim->job_cpus) {
        sim->busy_cpus -= (int64_t)sim->job_cpus[job] * sim->nodes[job];
        sim->busy_mem -= (int64_t)sim->job_mem[job] * sim->nodes[job];
    }
    release_nodes(sim, job);
    est_remove(sim, job);
    sim->state_version++;
    sim->sched_requests++; /* epilog complete: agent.c queues the scheduler */
}

void gp_requeue_at(Sim *sim, int32_t job, double at, int resubmitted) {
    gp_event_push(sim, &sim->requeue_heap, &sim->requeue_len, &sim->requeue_cap, (GpEvent){at, job});
    if (resubmitted)
        for (int32_t k = 0; k < sim->n_pieces; k++)
            if (sim->pieces[k].hooks->job_requeued)
                sim->pieces[k].hooks->job_requeued(sim, sim->pieces[k].state, job, sim->now, at);
}

void gp_job_leaves_early(Sim *sim, int32_t job, double leave) {
    sim->end_time[job] = leave;
    gp_event_push(sim, &sim->end_heap, &sim->end_len, &sim->end_cap, (GpEvent){leave, job});
    est_remove(sim, job); /* a backfill plan sees it leave then */
    sim->est_end[job] = leave;
    sim->ends_moved++;
    sim->est_len++;
    est_sift_up(sim, sim->est_len - 1, job);
    sim->state_version++;
}

int gp_job_on_node(const Sim *sim, int32_t job, int32_t node) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        if (node >= r[2 * k] && node < r[2 * k] + r[2 * k + 1]) return 1;
    return 0;
}

/* ---- the event loop ------------------------------------------------------------------------ */

/* Does a piece have instants to come that a queued job may wait for? */
static int pieces_may_wake(const Sim *sim) {
    for (int32_t k = 0; k < sim->n_pieces; k++)
        if (sim->pieces[k].hooks->may_wake && sim->pieces[k].hooks->may_wake(sim, sim->pieces[k].state)) return 1;
    return 0;
}

int64_t gp_run(Sim *sim, double *tl_time, int64_t *tl_busy_gpus, int32_t *tl_queued, int64_t tl_capacity) {
    int32_t next_arrival = 0;
    int64_t rows = 0, instants = 0;
    const GpPiece *pieces = sim->pieces;
    int32_t n_pieces = sim->n_pieces;
    for (int32_t j = 0; j < sim->n_jobs; j++) sim->start[j] = NAN;
    /* a queued job may wait for a piece's instant (a reservation ending, a node back) with nothing
     * running: go on while a piece has some; or for the pass's own clock, while it says a wake-up
     * may start one */
    while (next_arrival < sim->n_jobs || sim->end_len > 0 || sim->requeue_len > 0 ||
           (sim->q_len > 0 && (pieces_may_wake(sim) || (sim->wake_at < INFINITY && sim->policy_waits)))) {
        /* the next instant: the earliest job end, arrival, requeue, piece instant or wake-up */
        double now = INFINITY;
        if (sim->end_len > 0 && sim->end_heap[0].time < now) now = sim->end_heap[0].time;
        if (next_arrival < sim->n_jobs && sim->submit[next_arrival] < now) now = sim->submit[next_arrival];
        if (sim->requeue_len > 0 && sim->requeue_heap[0].time < now) now = sim->requeue_heap[0].time;
        for (int32_t k = 0; k < n_pieces; k++)
            if (pieces[k].hooks->next_event) {
                double t = pieces[k].hooks->next_event(sim, pieces[k].state);
                if (t < now) now = t;
            }
        if (now <= sim->wake_at) sim->events++; /* not a wake-up alone */
        if (sim->wake_at < now) now = sim->wake_at;
        if (now >= sim->wake_at) sim->wake_at = INFINITY; /* this instant serves the wake-up */
        sim->now = now;
        /* Ctrl-C and SIGTERM reach Python only between bytecodes: look every few thousand
         * instants, so a long run stops within a fraction of a second (KeyboardInterrupt) */
        if ((++instants & GP_SIGNAL_CHECK_MASK) == 0) {
            if (gp_progress_clock) *gp_progress_clock = now;
            PyGILState_STATE gil = PyGILState_Ensure();
            int signalled = PyErr_CheckSignals();
            PyGILState_Release(gil);
            if (signalled) {
                sim->hook_error = 1;
                return -3;
            }
        }
        /* 0. the pieces' instant (priorities: usage up to now, the recalculation when due) */
        for (int32_t k = 0; k < n_pieces; k++)
            if (pieces[k].hooks->instant && pieces[k].hooks->instant(sim, pieces[k].state, now) < 0)
                return sim->hook_error ? -3 : -1;
        /* 1. all ends at this instant (skipping events a preemption made stale) */
        while (sim->end_len > 0 && sim->end_heap[0].time <= now) {
            GpEvent event = gp_event_pop(sim->end_heap, &sim->end_len);
            if (event.time != sim->end_time[event.job]) continue;
            sim->end_time[event.job] = NAN; /* not running */
            int taken = 0;
            for (int32_t k = 0; k < n_pieces && !taken; k++)
                if (pieces[k].hooks->end_due) taken = pieces[k].hooks->end_due(sim, pieces[k].state, event.job, now);
            if (!taken) gp_job_leave(sim, event.job);
        }
        /* 2. all arrivals, then the requeued jobs due */
        for (; next_arrival < sim->n_jobs && sim->submit[next_arrival] <= now; next_arrival++) {
            if (!(sim->quiet_arrival && sim->quiet_arrival[next_arrival])) sim->sched_requests++;
            queue_append(sim, next_arrival);
        }
        while (sim->requeue_len > 0 && sim->requeue_heap[0].time <= now)
            queue_append(sim, gp_event_pop(sim->requeue_heap, &sim->requeue_len).job);
        /* 3. the pieces' own events (nodes lent and returned, jobs evicted from lent nodes) */
        for (int32_t k = 0; k < n_pieces; k++)
            if (pieces[k].hooks->after_arrivals) pieces[k].hooks->after_arrivals(sim, pieces[k].state, now);
        /* 4. one scheduling pass */
        sim->sched->pass(sim, sim->sched_state, now);
        if (sim->out_of_memory) return -1;
        if (sim->policy_error) return -2;
        for (int32_t k = 0; k < n_pieces; k++)
            if (pieces[k].hooks->after_pass) pieces[k].hooks->after_pass(sim, pieces[k].state, now);
        if (sim->q_holes > 64 && sim->q_holes > sim->q_len) queue_compact(sim);
        if (rows == 0 || tl_busy_gpus[rows - 1] != sim->busy_gpus || tl_queued[rows - 1] != sim->q_len) {
            if (rows == tl_capacity) return -4;
            tl_time[rows] = now;
            tl_busy_gpus[rows] = sim->busy_gpus;
            tl_queued[rows] = sim->q_len;
            if (sim->tl_busy_cpus) {
                sim->tl_busy_cpus[rows] = sim->busy_cpus;
                sim->tl_busy_mem[rows] = sim->busy_mem;
            }
            rows++;
        }
    }
    return rows;
}
