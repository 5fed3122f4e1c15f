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

int gp_sim_init(Sim *sim, int32_t n_jobs, int32_t total_nodes) {
    memset(sim, 0, sizeof(*sim));
    sim->n_jobs = n_jobs;
    sim->total_nodes = total_nodes;
    sim->free_nodes = total_nodes;
    sim->n_words = (total_nodes + 63) / 64;
    sim->n_summary = (sim->n_words + 63) / 64;
    sim->free_bits = xcalloc(sim, (size_t)sim->n_words, sizeof(uint64_t));
    sim->free_summary = xcalloc(sim, (size_t)sim->n_summary, sizeof(uint64_t));
    sim->q_job = xcalloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->q_nodes = xcalloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->q_estimate = xcalloc(sim, (size_t)n_jobs, sizeof(double));
    sim->end_heap = xcalloc(sim, (size_t)total_nodes, sizeof(int32_t));
    sim->end_time = xcalloc(sim, (size_t)n_jobs, sizeof(double));
    sim->est_heap = xcalloc(sim, (size_t)total_nodes, sizeof(int32_t));
    sim->est_pos = xcalloc(sim, (size_t)n_jobs, sizeof(int32_t));
    sim->est_end = xcalloc(sim, (size_t)n_jobs, sizeof(double));
    sim->walk_heap = xcalloc(sim, (size_t)total_nodes + 1, sizeof(int32_t));
    sim->profile_time = xcalloc(sim, 2 * (size_t)n_jobs + (size_t)total_nodes + 2, sizeof(double));
    sim->profile_free = xcalloc(sim, 2 * (size_t)n_jobs + (size_t)total_nodes + 2, sizeof(int32_t));
    sim->wake_at = INFINITY;
    sim->ranges_cap = 1024;
    sim->ranges = xcalloc(sim, (size_t)sim->ranges_cap, 2 * sizeof(int32_t));
    if (sim->out_of_memory) return -1;
    for (int32_t w = 0; w < sim->n_words; w++) {
        int32_t bits = total_nodes - 64 * w;
        sim->free_bits[w] = bits >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << bits) - 1);
        sim->free_summary[w >> 6] |= UINT64_C(1) << (w & 63);
    }
    return 0;
}

void gp_sim_free(Sim *sim) {
    PyMem_RawFree(sim->free_bits);
    PyMem_RawFree(sim->free_summary);
    PyMem_RawFree(sim->q_job);
    PyMem_RawFree(sim->q_nodes);
    PyMem_RawFree(sim->q_estimate);
    PyMem_RawFree(sim->end_heap);
    PyMem_RawFree(sim->end_time);
    PyMem_RawFree(sim->est_heap);
    PyMem_RawFree(sim->est_pos);
    PyMem_RawFree(sim->est_end);
    PyMem_RawFree(sim->walk_heap);
    PyMem_RawFree(sim->ranges);
    PyMem_RawFree(sim->profile_time);
    PyMem_RawFree(sim->profile_free);
    if (sim->prio_static) gp_priority_free(sim);
}

/* ---- heaps ----------------------------------------------------------------------------- */

static inline int end_less(const Sim *sim, int32_t a, int32_t b) {
    double ta = sim->end_time[a], tb = sim->end_time[b];
    return ta < tb || (ta == tb && a < b);
}

static void end_push(Sim *sim, int32_t job) {
    int32_t *h = sim->end_heap;
    int32_t i = sim->end_len++;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!end_less(sim, job, h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = job;
}

static int32_t end_pop(Sim *sim) {
    int32_t *h = sim->end_heap;
    int32_t top = h[0];
    int32_t last = h[--sim->end_len];
    int32_t n = sim->end_len, i = 0;
    while (1) {
        int32_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && end_less(sim, h[child + 1], h[child])) child++;
        if (!end_less(sim, h[child], last)) break;
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

/* Take the `count` lowest-numbered free nodes and record them as the job's ranges. */
static void take_nodes(Sim *sim, int32_t job, int32_t count) {
    int64_t job_first = sim->ranges_len;
    int32_t s = 0;
    while (count > 0 && !sim->out_of_memory) {
        while (sim->free_summary[s] == 0) s++;
        int32_t w = 64 * s + __builtin_ctzll(sim->free_summary[s]);
        uint64_t bits = sim->free_bits[w];
        while (bits && count > 0) {
            int32_t low = __builtin_ctzll(bits);
            uint64_t from_low = bits >> low;
            int32_t run = (~from_low == 0) ? 64 - low : __builtin_ctzll(~from_low);
            if (run > count) run = count;
            uint64_t mask = (run == 64) ? ~UINT64_C(0) : (((UINT64_C(1) << run) - 1) << low);
            bits &= ~mask;
            count -= run;
            push_range(sim, job_first, 64 * w + low, run);
        }
        sim->free_bits[w] = bits;
        if (bits == 0) sim->free_summary[s] &= ~(UINT64_C(1) << (w & 63));
    }
    sim->range_first[job] = job_first;
    sim->range_count[job] = (int32_t)(sim->ranges_len - job_first);
}

static void release_nodes(Sim *sim, int32_t job) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++) {
        int32_t node = r[2 * k], left = r[2 * k + 1];
        while (left > 0) {
            int32_t w = node >> 6, bit = node & 63;
            int32_t span = 64 - bit < left ? 64 - bit : left;
            uint64_t mask = (span == 64) ? ~UINT64_C(0) : (((UINT64_C(1) << span) - 1) << bit);
            sim->free_bits[w] |= mask;
            sim->free_summary[w >> 6] |= UINT64_C(1) << (w & 63);
            node += span;
            left -= span;
        }
    }
}

/* ---- queue and job life cycle ------------------------------------------------------------ */

/* Queue slots are taken in arrival order; every job arrives once, so n_jobs slots suffice. */
static void queue_append(Sim *sim, int32_t job) {
    sim->q_job[sim->q_count] = job;
    sim->q_nodes[sim->q_count] = sim->nodes[job];
    sim->q_estimate[sim->q_count] = sim->estimate[job];
    sim->q_count++;
    sim->q_len++;
    sim->changes++;
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

void gp_start_slot(Sim *sim, int32_t slot, double now) {
    int32_t job = sim->q_job[slot];
    if (sim->nodes[job] > sim->free_nodes) { /* a policy bug: refuse rather than corrupt state */
        sim->policy_error = 1;
        return;
    }
    sim->q_nodes[slot] = GP_GONE;
    sim->q_len--;
    sim->q_holes++;
    sim->changes++;
    if (sim->prio_static) gp_priority_started(sim, job, +1);
    if (sim->limit_group) {
        int32_t group = sim->limit_group[job];
        sim->group_gpus[group] += sim->gpus[job];
        sim->group_jobs[group] += 1;
        sim->qos_gpus[sim->group_qos[group]] += sim->gpus[job];
    }
    sim->start[job] = now;
    sim->free_nodes -= sim->nodes[job];
    sim->busy_gpus += sim->gpus[job];
    take_nodes(sim, job, sim->nodes[job]);
    sim->end_time[job] = now + sim->run[job];
    end_push(sim, job);
    sim->est_end[job] = now + sim->estimate[job];
    sim->est_len++;
    est_sift_up(sim, sim->est_len - 1, job);
}

static void end_job(Sim *sim, int32_t job) {
    sim->changes++;
    if (sim->prio_static) gp_priority_started(sim, job, -1);
    if (sim->limit_group) {
        int32_t group = sim->limit_group[job];
        sim->group_gpus[group] -= sim->gpus[job];
        sim->group_jobs[group] -= 1;
        sim->qos_gpus[sim->group_qos[group]] -= sim->gpus[job];
    }
    sim->free_nodes += sim->nodes[job];
    sim->busy_gpus -= sim->gpus[job];
    release_nodes(sim, job);
    est_remove(sim, job);
}

int64_t gp_run(Sim *sim, SchedulePass pass, double *tl_time, int64_t *tl_busy_gpus,
               int32_t *tl_queued, int64_t tl_capacity) {
    int32_t next_arrival = 0;
    int64_t rows = 0;
    for (int32_t j = 0; j < sim->n_jobs; j++) sim->start[j] = NAN;
    while (next_arrival < sim->n_jobs || sim->end_len > 0) {
        /* the next instant: the earliest job end, arrival or requested wake-up */
        double now = sim->wake_at;
        if (sim->end_len > 0 && sim->end_time[sim->end_heap[0]] < now) now = sim->end_time[sim->end_heap[0]];
        if (next_arrival < sim->n_jobs && sim->submit[next_arrival] < now) now = sim->submit[next_arrival];
        if (now >= sim->wake_at) sim->wake_at = INFINITY; /* this instant serves the wake-up */
        sim->now = now;
        /* 0. priorities: usage up to now, and the periodic recalculation when due */
        if (sim->prio_static && gp_priority_instant(sim, now) < 0) return sim->hook_error ? -3 : -1;
        /* 1. all ends at this instant */
        while (sim->end_len > 0 && sim->end_time[sim->end_heap[0]] <= now) end_job(sim, end_pop(sim));
        /* 2. all arrivals */
        while (next_arrival < sim->n_jobs && sim->submit[next_arrival] <= now)
            queue_append(sim, next_arrival++);
        /* 3. one scheduling pass */
        pass(sim, now);
        if (sim->out_of_memory) return -1;
        if (sim->policy_error) return -2;
        if (sim->prio_static && (sim->q_len > 0 || sim->end_len > 0)) gp_wake_at(sim, sim->next_recalc);
        if (sim->q_holes > 64 && sim->q_holes > sim->q_len) queue_compact(sim);
        if (rows < tl_capacity &&
            (rows == 0 || tl_busy_gpus[rows - 1] != sim->busy_gpus || tl_queued[rows - 1] != sim->q_len)) {
            tl_time[rows] = now;
            tl_busy_gpus[rows] = sim->busy_gpus;
            tl_queued[rows] = sim->q_len;
            rows++;
        }
    }
    return rows;
}
