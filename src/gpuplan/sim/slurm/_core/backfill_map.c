/*
 * Slurm's backfill cycle (SchedulerType=sched/backfill, Slurm 22.05's backfill.c:_attempt_backfill
 * and select/cons_tres job_test.c:_will_run_test), on named nodes.
 *
 * The cycle keeps a map (node_space) of records [begin, end) x the nodes no reservation of this
 * cycle holds. It starts as one record [floor_res(now), floor_res(now + bf_window)) with every
 * node: running jobs are not in it (bf_running_job_reserve is off by default) but the will-run
 * test knows them by their planned end, start + time limit. Jobs are tested in queue order, at most
 * bf_max_job_test. For a job of time limit L and start candidate s (first s = now):
 * - candidates: the nodes of every record that ends after s and begins at or before s + L, less
 *   those an advance reservation the job may not use holds over [s, s + L];
 * - will-run: if the job fits now on candidates with its GPUs free it starts now, on them (best
 *   fit), and, when it takes them whole, holds them in the map until floor_res(now + L)
 *   (backfill.c:_bf_reserve_running; a job sharing nodes stays out of the map); otherwise the
 *   running jobs are released in order of planned end, in groups whose windows start at the
 *   30-s boundary (of the epoch clock) after the first one's end and double; after each group the
 *   job is tested on the candidates with its GPUs free once the released jobs are gone (whole nodes
 *   in a whole-node pool, an overlay of free GPUs per node otherwise); its start T is the last
 *   released job's end; if that is later than now and the job may preempt, it preempts the jobs
 *   it needs gone from its candidates (the will-run test with preemptee candidates) and starts;
 * - a start beyond now reserves [floor_res(T), floor_res(T + L)) (at least one bf_resolution) on the
 *   chosen nodes, whole nodes even for a job that shares them, unless a node is already held in
 *   that span (then retry from T, backfill.c:_test_resv_overlap), or T is beyond bf_window (no
 *   reservation). Advance reservations are not looked at again for T: Slurm's will-run test only
 *   knows the candidates of [s, s + L], so a plan may lie on nodes a reservation takes by then;
 * - when too few candidates, or T is after the first map boundary at which a candidate frees up,
 *   retry from that boundary (TRY_LATER); when an advance reservation the job may not use
 *   overlaps [s, s + L], also from one second after the first reservation end at or after s,
 *   rounded up to bf_resolution, if that comes first and within bf_window (find_resv_end).
 * floor_res rounds down to a multiple of bf_resolution on the epoch clock (clock_epoch_s), so a
 * reservation may lose up to bf_resolution - 1 seconds at its end, as Slurm's does.
 * Only starts are seen outside a cycle: reservations live for the cycle, so the map is rebuilt
 * every time, and the cycle ends as soon as none of the jobs it has still to test could start on
 * the free nodes (GPUs) that reservations leave clear for its time limit (any_could_start): the
 * rest would only add reservations, and change nothing. Without a free node no job starts in a
 * whole-node pool; with jobs sharing nodes the free GPUs per node are counted. This keeps a cycle on a 10,000-GPU pool to the jobs
 * that matter (bench_slurm_scale.py --days 4, when this was added: 12.7 s without it, 0.8 s
 * with it, the same schedule). A job's later start times only move forward, and so does its window [s, s + L] over
 * the records: the window's intersection is kept as a queue of two stacks (suffix intersections
 * in front, a running one behind), so a job costs each record once, not once per try.
 *
 * Short records. Each record keeps its node count and whether a node it lacks is in the next one
 * (it frees up at its end: map_gain). While no node frees up, a window's records only lose nodes,
 * so a job's next start time (TRY_LATER) is the end of the first such record from the window's
 * first; and a record with fewer nodes than the job needs fails every try whose window holds it.
 * Those tries are counted, not made: on deep queues nearly every try fails so (lublin_256 x 10,
 * bench/_case.py, when this was added: 445.8 M of 480.5 M tries).
 *
 * Quiet cycles. With deep queues most cycles start nothing and the next one sees the same queue,
 * running jobs and nodes (sim->state_version): it then makes the same decisions, and starts
 * nothing either, unless one of them depends on `now`. A cycle notes where they do (Quiet): a
 * will-run answer (now + 1 for a job past its planned end, else a planned end), a plan rejected
 * beyond bf_window (now + bf_window), a reservation's start (a start at or before now would be
 * clipped to the map's begin), a job's first window [now, now + limit] (the records it reaches),
 * and the map's end, floor_res(now + bf_window): a later cycle's map ends later by a multiple of
 * bf_resolution, and only its last record is longer, so it decides the same unless it ends after
 * a time the cycle used at or beyond the old end (a try's start, a reservation's end, or its
 * start when it lies beyond the map). Rounding the map's begin to bf_resolution changes
 * nothing then: its first record holds every node. The pruning (any_could_start) only ends a
 * later cycle sooner, which starts nothing. The next cycles with the same state are skipped while
 * `now` stays within those bounds. Preemption and advance
 * reservations decide on `now` in more ways (grace times, reservation windows): with them every
 * cycle runs. Only starts leave a cycle, so the schedule is the same (bench/identical.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <string.h>

#include "backfill_map.h"
#include "preempt.h"
#include "qos.h"
#include "reservations.h"

/* Where a cycle's decisions depend on `now` (see quiet cycles above): the same decisions hold at a
 * later cycle's now' <= through and now' < before, with a map that ends by `ends_by`. */
typedef struct {
    double through, before, ends_by;
} Quiet;

/* A cycle whose map ends at map_end used time t (a try's start, a reservation's bounds): a later
 * map that ends after t would hold a record there that this one lacks. Times before map_end are
 * in both maps alike (only the last record's end moves). */
static inline void quiet_used(Quiet *quiet, double map_end, double t) {
    if (t >= map_end && t < quiet->ends_by) quiet->ends_by = t;
}

/* Slurm gives up on a job after this many later start times (its bf_max_time safeguard). */
#define MAX_TRIES 500

static double floor_res(const BackfillClock *clock, double t) {
    return floor((t + clock->epoch_s) / clock->resolution_s) * clock->resolution_s - clock->epoch_s;
}

static double ceil_res(const BackfillClock *clock, double t) {
    return ceil((t + clock->epoch_s) / clock->resolution_s) * clock->resolution_s - clock->epoch_s;
}

/* The nodes of a bitmap. A wheel is built for any x86-64, without the popcnt instruction (the
 * compiler's popcount is then a library call per word): a CPU that has it (any x86-64 since 2008)
 * counts with it, chosen once at run time; on arm64 the compiler's own is an instruction. */
static inline __attribute__((always_inline)) int32_t popcount_words_of(const uint64_t *bits, int32_t n_words) {
    int32_t count = 0;
    for (int32_t w = 0; w < n_words; w++) count += __builtin_popcountll(bits[w]);
    return count;
}

static int32_t popcount_portable(const uint64_t *bits, int32_t n_words) { return popcount_words_of(bits, n_words); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* the same loop, compiled with the instruction (inlined here, its builtin expands to popcnt) */
__attribute__((target("popcnt"))) static int32_t popcount_popcnt(const uint64_t *bits, int32_t n_words) {
    return popcount_words_of(bits, n_words);
}

static int32_t (*popcount_words)(const uint64_t *, int32_t) = NULL;

static int32_t popcount(const uint64_t *bits, int32_t n_words) {
    if (!popcount_words) {
        __builtin_cpu_init();
        popcount_words = __builtin_cpu_supports("popcnt") ? popcount_popcnt : popcount_portable;
    }
    return popcount_words(bits, n_words);
}
#else
#define popcount popcount_portable
#endif

/* Does a bitmap hold at least `need` nodes? A few are found by clearing the lowest bits, with no
 * count of the rest (most tests ask for one node, or a handful). */
static inline int holds_at_least(const uint64_t *bits, int32_t n_words, int32_t need) {
    if (need > 64) return popcount(bits, n_words) >= need;
    int32_t found = 0;
    for (int32_t w = 0; w < n_words; w++)
        for (uint64_t b = bits[w]; b; b &= b - 1)
            if (++found >= need) return 1;
    return need <= 0;
}

/* Room for `extra` more records (and their bitmaps). */
static int map_reserve(Sim *sim, BackfillMap *bf, int32_t extra) {
    if (bf->map_len + extra <= bf->map_cap) return 0;
    int32_t cap = 2 * (bf->map_len + extra) + 8;
    double *begin = PyMem_RawRealloc(bf->map_begin, (size_t)cap * sizeof(double));
    if (begin) bf->map_begin = begin;
    double *end = PyMem_RawRealloc(bf->map_end, (size_t)cap * sizeof(double));
    if (end) bf->map_end = end;
    uint64_t *bits = PyMem_RawRealloc(bf->map_bits, (size_t)cap * (size_t)sim->n_words * sizeof(uint64_t));
    if (bits) bf->map_bits = bits;
    uint64_t *suffix = PyMem_RawRealloc(bf->map_suffix, (size_t)cap * (size_t)sim->n_words * sizeof(uint64_t));
    if (suffix) bf->map_suffix = suffix;
    int32_t *count = PyMem_RawRealloc(bf->map_count, (size_t)cap * sizeof(int32_t));
    if (count) bf->map_count = count;
    uint8_t *gain = PyMem_RawRealloc(bf->map_gain, (size_t)cap);
    if (gain) bf->map_gain = gain;
    if (!begin || !end || !bits || !suffix || !count || !gain) {
        sim->out_of_memory = 1;
        return -1;
    }
    bf->map_cap = cap;
    return 0;
}

static inline uint64_t *rec_bits(const Sim *sim, BackfillMap *bf, int32_t k) {
    return bf->map_bits + (size_t)k * sim->n_words;
}

/* The first of times[from .. len) after t (times ascending), or len. The callers' t only moves
 * forward, and the answer is most often at or near `from`: it is looked for by doubling steps from
 * there, then halving (O(log distance), not O(log len)). */
static inline int32_t first_after(const double *times, int32_t from, int32_t len, double t) {
    if (from >= len || times[from] > t) return from;
    int32_t step = 1; /* times[from] <= t */
    while (from + step < len && times[from + step] <= t) {
        from += step;
        step *= 2;
    }
    if (from + step < len) len = from + step; /* times[len] > t */
    from++;
    while (from < len) {
        int32_t mid = from + (len - from) / 2;
        if (times[mid] <= t)
            from = mid + 1;
        else
            len = mid;
    }
    return from;
}

/* The first record that ends after t (records tile time in order). */
static int32_t first_ending_after(const BackfillMap *bf, double t) {
    return first_after(bf->map_end, 0, bf->map_len, t);
}

/* Insert a copy of record k after it, spanning [from, its end); record k then ends at `from`. */
static void split_after(Sim *sim, BackfillMap *bf, int32_t k, double from) {
    int32_t W = sim->n_words, tail = bf->map_len - k - 1;
    memmove(bf->map_begin + k + 2, bf->map_begin + k + 1, (size_t)tail * sizeof(double));
    memmove(bf->map_end + k + 2, bf->map_end + k + 1, (size_t)tail * sizeof(double));
    memmove(rec_bits(sim, bf, k + 2), rec_bits(sim, bf, k + 1), (size_t)tail * W * sizeof(uint64_t));
    memmove(bf->map_count + k + 2, bf->map_count + k + 1, (size_t)tail * sizeof(int32_t));
    memmove(bf->map_gain + k + 2, bf->map_gain + k + 1, (size_t)tail);
    memcpy(rec_bits(sim, bf, k + 1), rec_bits(sim, bf, k), (size_t)W * sizeof(uint64_t));
    bf->map_count[k + 1] = bf->map_count[k];
    bf->map_gain[k + 1] = bf->map_gain[k];
    bf->map_gain[k] = 0; /* (the same nodes on both sides) */
    bf->map_begin[k + 1] = from;
    bf->map_end[k + 1] = bf->map_end[k];
    bf->map_end[k] = from;
    bf->map_len++;
}

static void remove_record(Sim *sim, BackfillMap *bf, int32_t k) {
    int32_t W = sim->n_words, tail = bf->map_len - k - 1;
    memmove(bf->map_begin + k, bf->map_begin + k + 1, (size_t)tail * sizeof(double));
    memmove(bf->map_end + k, bf->map_end + k + 1, (size_t)tail * sizeof(double));
    memmove(rec_bits(sim, bf, k), rec_bits(sim, bf, k + 1), (size_t)tail * W * sizeof(uint64_t));
    memmove(bf->map_count + k, bf->map_count + k + 1, (size_t)tail * sizeof(int32_t));
    memmove(bf->map_gain + k, bf->map_gain + k + 1, (size_t)tail);
    bf->map_len--;
}

/* The gain flags of records [from, to] (the last record has none: nothing follows it). */
static void refresh_gains(const Sim *sim, BackfillMap *bf, int32_t from, int32_t to) {
    for (int32_t k = from; k <= to && k < bf->map_len; k++) {
        uint8_t gains = 0;
        if (k + 1 < bf->map_len) {
            const uint64_t *bits = rec_bits(sim, bf, k), *next = rec_bits(sim, bf, k + 1);
            for (int32_t w = 0; w < sim->n_words && !gains; w++) gains = (next[w] & ~bits[w]) != 0;
        }
        bf->map_gain[k] = gains;
    }
}

/* The words of `bits` that hold a node, in `words`; how many. A reservation's nodes are a few, in a
 * word or two of the map's bitmaps: the records are read and changed there only. */
static int32_t words_holding(const uint64_t *bits, int32_t n_words, int32_t *words) {
    int32_t n = 0;
    for (int32_t w = 0; w < n_words; w++)
        if (bits[w]) words[n++] = w;
    return n;
}

/* backfill.c:_add_reservation: split the map at start and end, take `nodes` out of the records
 * in between (a reservation lasts at least one resolution), then merge the first pair of
 * neighbouring records that became equal. */
static void add_reservation(Sim *sim, BackfillMap *bf, const BackfillClock *clock, double start, double end,
                            const uint64_t *nodes) {
    int32_t W = sim->n_words, *words = bf->word_scratch, n_words = words_holding(nodes, W, words);
    if (map_reserve(sim, bf, 2) < 0) return;
    if (start < bf->map_begin[0]) start = bf->map_begin[0];
    if (end < start + clock->resolution_s) end = start + clock->resolution_s;
    int placed = 0;
    int32_t j = 0, one_before = 0, one_after = -1, last = -1;
    for (;;) {
        if (bf->map_end[j] > start) {
            split_after(sim, bf, j, start);
            placed = 1;
            break;
        }
        if (bf->map_end[j] == start) {
            placed = 1;
            break;
        }
        one_before = j++;
        if (j >= bf->map_len) break;
    }
    while (placed) {
        if (++j >= bf->map_len) break;
        if (end < bf->map_end[j]) split_after(sim, bf, j, end);
        uint64_t *bits = rec_bits(sim, bf, j);
        for (int32_t i = 0; i < n_words; i++) {
            uint64_t taken = bits[words[i]] & nodes[words[i]];
            bf->map_count[j] -= popcount(&taken, 1);
            bits[words[i]] &= ~taken;
        }
        last = j;
        if (end == bf->map_end[j]) {
            one_after = j + 1 < bf->map_len ? j + 1 : -1;
            break;
        }
    }
    for (int32_t i = one_before; i != one_after && i + 1 < bf->map_len; i++) {
        if (memcmp(rec_bits(sim, bf, i), rec_bits(sim, bf, i + 1), (size_t)W * sizeof(uint64_t)) == 0) {
            bf->map_end[i] = bf->map_end[i + 1];
            remove_record(sim, bf, i + 1);
            break;
        }
    }
    /* the records from one_before + 1 to `last` lost nodes (one of them may have merged since) */
    if (last >= 0) refresh_gains(sim, bf, one_before, last);
}

/* The first record from `from` up to the first one beginning after `until`, short of the last one,
 * after whose end a node it lacks frees up (map_gain), or -1. */
static int32_t first_gain(const BackfillMap *bf, int32_t from, double until) {
    for (int32_t k = from; k + 1 < bf->map_len; k++) {
        if (bf->map_gain[k]) return k;
        if (bf->map_begin[k] > until) break; /* (k + 1 lies beyond it) */
    }
    return -1;
}

/* backfill.c:_test_resv_overlap: does a record within [start, end) lack one of `nodes`? */
static int overlaps(const Sim *sim, BackfillMap *bf, const uint64_t *nodes, double start, double end) {
    int32_t *words = bf->word_scratch, n_words = words_holding(nodes, sim->n_words, words);
    for (int32_t k = first_ending_after(bf, start); k < bf->map_len && bf->map_begin[k] < end; k++) {
        const uint64_t *bits = rec_bits(sim, bf, k);
        for (int32_t i = 0; i < n_words; i++)
            if (nodes[words[i]] & ~bits[words[i]]) return 1;
    }
    return 0;
}

/*
 * The intersection of the records [front, back] of a window whose ends only move forward: records
 * [front, split] hold suffix intersections (map_suffix), records (split, back] are folded into
 * `behind`. Each record is folded in at most twice per job.
 */
typedef struct {
    int32_t front, split, back;
    uint64_t *behind;
} Window;

static void window_reset(const Sim *sim, Window *win, const uint64_t *all, int32_t front) {
    win->front = front;
    win->split = win->back = front - 1;
    memcpy(win->behind, all, (size_t)sim->n_words * sizeof(uint64_t));
}

/* Move the window to [front, back] (neither end moves back). */
static void window_move(Sim *sim, BackfillMap *bf, Window *win, const uint64_t *all, int32_t front, int32_t back) {
    int32_t W = sim->n_words;
    if (front > win->back) {
        window_reset(sim, win, all, front);
    }
    for (int32_t k = win->back + 1; k <= back; k++) {
        const uint64_t *bits = rec_bits(sim, bf, k);
        for (int32_t w = 0; w < W; w++) win->behind[w] &= bits[w];
    }
    if (back > win->back) win->back = back;
    win->front = front;
    if (win->front > win->split && win->front <= win->back) { /* the front stack ran out: rebuild it */
        for (int32_t k = win->back; k >= win->front; k--) {
            uint64_t *suffix = bf->map_suffix + (size_t)k * W;
            const uint64_t *bits = rec_bits(sim, bf, k);
            if (k == win->back)
                memcpy(suffix, bits, (size_t)W * sizeof(uint64_t));
            else
                for (int32_t w = 0; w < W; w++) suffix[w] = bits[w] & suffix[W + w];
        }
        win->split = win->back;
        memcpy(win->behind, all, (size_t)W * sizeof(uint64_t));
    }
}

/* The intersection of the window's records (every node when it holds none). */
static void window_and(const Sim *sim, BackfillMap *bf, const Window *win, const uint64_t *all, uint64_t *out) {
    int32_t W = sim->n_words;
    if (win->front > win->back) {
        memcpy(out, all, (size_t)W * sizeof(uint64_t));
        return;
    }
    const uint64_t *suffix = win->front <= win->split ? bf->map_suffix + (size_t)win->front * W : all;
    for (int32_t w = 0; w < W; w++) out[w] = suffix[w] & win->behind[w];
}

/* The mask of nodes [first, first + count) within word w. */
static inline uint64_t range_mask(int32_t w, int32_t first, int32_t count) {
    int32_t lo = first - 64 * w, hi = first + count - 64 * w; /* bit range [lo, hi) of this word */
    if (lo < 0) lo = 0;
    if (hi > 64) hi = 64;
    if (hi <= lo) return 0;
    uint64_t upto = hi == 64 ? ~UINT64_C(0) : (UINT64_C(1) << hi) - 1;
    return upto & ~((UINT64_C(1) << lo) - 1);
}

/*
 * A running job as will-run tests read it, in order of planned end: its planned end and, when its
 * nodes are one run of consecutive nodes (a single node, or best fit's usual choice), that run.
 * Will-run tests walk hundreds of running jobs each, so what they read of them lies in sequence
 * here rather than in the per-job arrays (of a million jobs).
 */
typedef struct RunEntry {
    double end; /* est_end */
    int32_t job;
    int32_t first; /* its nodes [first, first + span), when span > 0 */
    int32_t span;  /* 0: several runs (read from sim->ranges) */
} RunEntry;

static RunEntry run_entry(const Sim *sim, int32_t job) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    int one = sim->range_count[job] == 1;
    return (RunEntry){sim->est_end[job], job, one ? r[0] : -1, one ? r[1] : 0};
}

static inline int has_node(const uint64_t *bits, int32_t node) { return bits[node >> 6] >> (node & 63) & 1; }

/* Does one of nodes [first, first + count) lie in `bits`? */
static inline int range_touches(const uint64_t *bits, int32_t first, int32_t count) {
    for (int32_t w = first >> 6; w <= (first + count - 1) >> 6; w++)
        if (bits[w] & range_mask(w, first, count)) return 1;
    return 0;
}

/* Does the running job of `entry` hold a node of `bits`? */
static inline int job_touches(const Sim *sim, const RunEntry *entry, const uint64_t *bits) {
    if (entry->span == 1) return has_node(bits, entry->first);
    if (entry->span > 0) return range_touches(bits, entry->first, entry->span);
    int32_t job = entry->job;
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        if (range_touches(bits, r[2 * k], r[2 * k + 1])) return 1;
    return 0;
}

static void add_job_nodes(const Sim *sim, int32_t job, uint64_t *bits) {
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        for (int32_t w = r[2 * k] >> 6; w <= (r[2 * k] + r[2 * k + 1] - 1) >> 6; w++)
            bits[w] |= range_mask(w, r[2 * k], r[2 * k + 1]);
}

/* A released running job frees its nodes for a will-run test of `placed`: whole nodes in a whole-node
 * pool; else its GPUs (CPUs, memory) on the overlay, and its nodes that `placed` then fits join
 * `usable` (with `binds` its CPUs and memory are checked too, else its GPUs free mean they are). */
static inline void release_on(Sim *sim, int32_t node, int32_t job, int32_t placed, int binds, uint64_t *usable) {
    int fits;
    if (sim->node_off && sim->node_off[node]) { /* a lent node's GPUs come back to no one */
        fits = binds ? gp_overlay_fits(sim, node, placed) : gp_overlay_free(sim, node) >= sim->gpn[placed];
    } else {
        int counted = gp_counts_res(sim, job);
        gp_overlay_add(sim, node, sim->gpn[job], counted ? sim->job_cpus[job] : 0, counted ? sim->job_mem[job] : 0);
        /* (the node is on the overlay now) */
        fits = sim->ov_free[node] >= sim->gpn[placed] &&
               (!binds || (sim->ov_cpu[node] >= sim->job_cpus[placed] && sim->ov_mem[node] >= sim->job_mem[placed]));
    }
    if (fits) usable[node >> 6] |= UINT64_C(1) << (node & 63);
}

static void release_job(Sim *sim, const RunEntry *entry, int32_t placed, uint64_t *usable) {
    int32_t job = entry->job;
    if (sim->whole_nodes) {
        if (entry->span > 0)
            for (int32_t w = entry->first >> 6; w <= (entry->first + entry->span - 1) >> 6; w++)
                usable[w] |= range_mask(w, entry->first, entry->span);
        else
            add_job_nodes(sim, job, usable);
        return;
    }
    int binds = gp_res_binds(sim, placed);
    if (entry->span > 0) {
        for (int32_t node = entry->first; node < entry->first + entry->span; node++)
            release_on(sim, node, job, placed, binds, usable);
        return;
    }
    const int32_t *r = sim->ranges + 2 * sim->range_first[job];
    for (int32_t k = 0; k < sim->range_count[job]; k++)
        for (int32_t node = r[2 * k]; node < r[2 * k] + r[2 * k + 1]; node++)
            release_on(sim, node, job, placed, binds, usable);
}

/* Enough of `candidates` among `usable` for the `need` nodes of `job`? Then choose them
 * (node_scratch), by the free resources now or on the overlay. */
static int fits_on(Sim *sim, const uint64_t *candidates, const uint64_t *usable, uint64_t *both, int32_t need,
                   int32_t job, int on_overlay) {
    for (int32_t w = 0; w < sim->n_words; w++) both[w] = candidates[w] & usable[w];
    return holds_at_least(both, sim->n_words, need) && gp_choose_nodes(sim, both, need, job, on_overlay) == need;
}

/*
 * job_test.c:_will_run_test: the earliest time `job` (`need` nodes, its GPUs, CPUs and memory on
 * each) fits on `candidates`, with its nodes in node_scratch, or INFINITY. `ordered` are the
 * running jobs by planned end. Released jobs free whole nodes in a whole-node pool, else their
 * GPUs, CPUs and memory on the overlay. When the job does not fit now and preemption is on, every
 * running job it may preempt is released first (_build_cr_job_list takes the preemptee candidates
 * out of the future usage): if it fits then, it can start now by preempting (*preempts is set);
 * else the other jobs are released by planned end, in groups whose windows start at the 30-s
 * boundary after the first one's end and double. A running job with no candidate node is skipped,
 * and then the next one joins the group whatever its end (as Slurm's loop does).
 */
static double will_run(Sim *sim, BackfillMap *bf, const BackfillClock *clock, const uint64_t *candidates, int32_t need,
                       int32_t placed, double now, const RunEntry *ordered, int32_t n_running, int *preempts) {
    int32_t W = sim->n_words;
    uint64_t *released = bf->bits_scratch + 2 * (size_t)W, *both = bf->bits_scratch + 3 * (size_t)W;
    const uint64_t *usable_now = gp_usable_bits(sim, placed);
    *preempts = 0;
    if (fits_on(sim, candidates, usable_now, both, need, placed, 0)) return now;
    memcpy(released, usable_now, (size_t)W * sizeof(uint64_t));
    if (!sim->whole_nodes) gp_overlay_begin(sim, 0); /* (nothing counts its nodes by free GPUs) */
    if (sim->preempt) {
        int32_t kept = 0, gone = 0;
        for (int32_t k = 0; k < n_running; k++) {
            if (!gp_may_preempt(sim, placed, ordered[k].job)) {
                bf->run_kept[kept++] = ordered[k];
                continue;
            }
            gone++;
            release_job(sim, &ordered[k], placed, released);
        }
        if (gone > 0 && fits_on(sim, candidates, released, both, need, placed, !sim->whole_nodes)) {
            *preempts = 1;
            return now;
        }
        ordered = bf->run_kept;
        n_running = kept;
    }
    double window = 30, boundary = NAN;
    int32_t i = 0;
    while (i < n_running) {
        const RunEntry *last = NULL;
        int more = 1;
        for (;;) {
            if (i >= n_running) {
                more = 0;
                break;
            }
            const RunEntry *entry = &ordered[i++];
            if (!job_touches(sim, entry, candidates)) continue;
            if (isnan(boundary)) boundary = entry->end + 30 - fmod(fmod(entry->end + clock->epoch_s, 30) + 30, 30);
            last = entry;
            release_job(sim, entry, placed, released);
            if (i >= n_running) {
                more = 0;
                break;
            }
            if (ordered[i].end > boundary + window) break;
        }
        if (!last) break;
        window *= 2;
        while (i < n_running && ordered[i].end > boundary + window) window *= 2;
        /* a running job past its planned end (no time limit, or OverTimeLimit) still holds its
         * nodes now: the earliest start is then the next second */
        if (fits_on(sim, candidates, released, both, need, placed, !sim->whole_nodes))
            return fmax(now + 1, last->end);
        if (!more) break;
    }
    return INFINITY;
}

/*
 * Only starts leave a cycle, and a job starts only on free nodes whose first reservation (of this
 * cycle) begins after its window: free node k of `free_node` is clear until clear_until[k]. Could
 * any of the next jobs the cycle would test (up to `budget` of them) start? If none can, the rest
 * of the cycle only makes reservations, which can only take more nodes: it decides nothing more.
 */
static int double_descending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static int any_could_start(Sim *sim, BackfillMap *bf, int32_t slot, int64_t budget, double now,
                           const double *clear_until, int32_t n_free) {
    /* sorted latest first, the need-th value says whether `need` nodes are clear long enough */
    double *latest = bf->map_clear + sim->total_nodes;
    memcpy(latest, clear_until, (size_t)n_free * sizeof(double));
    qsort(latest, (size_t)n_free, sizeof(double), double_descending);
    for (; slot < sim->q_count && budget > 0; slot++) {
        int32_t need = sim->q_nodes[slot];
        if (need == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])) continue; /* not tested */
        budget--;
        if (need > n_free) continue;
        /* clear_until[need - 1] is the need-th latest: the job fits if it is past its window */
        if (latest[need - 1] > now + sim->q_estimate[slot]) return 1;
    }
    return 0;
}

/*
 * The same question where jobs share nodes: a job of `need` nodes with `gpus` GPUs each could start
 * only on as many free nodes with that many free GPUs, clear for its window. Most free nodes are
 * clear for good (no reservation of this cycle holds them): they are counted by free GPUs once;
 * the others are tested one by one, and so is every free node for a job whose CPUs or memory may
 * be short where its GPUs are free.
 */
static int any_could_start_gpus(Sim *sim, BackfillMap *bf, int32_t slot, int64_t budget, double now,
                                const int32_t *free_node, const double *clear_until, int32_t n_free) {
    int32_t G = sim->node_gpus, *at_least = bf->prune_scratch, *held = bf->prune_scratch + G + 2;
    memset(at_least, 0, (size_t)(G + 2) * sizeof(int32_t));
    int32_t n_held = 0;
    for (int32_t k = 0; k < n_free; k++) {
        if (clear_until[k] == INFINITY)
            at_least[sim->node_free[free_node[k]]]++;
        else
            held[n_held++] = k;
    }
    for (int32_t g = G - 1; g >= 1; g--) at_least[g] += at_least[g + 1];
    for (; slot < sim->q_count && budget > 0; slot++) {
        int32_t need = sim->q_nodes[slot], job = sim->q_job[slot];
        if (need == GP_GONE || gp_limit_reason(sim, job)) continue; /* not tested */
        budget--;
        int32_t gpus = sim->gpn[job], clear = at_least[gpus];
        double until = now + sim->q_estimate[slot];
        if (gp_res_binds(sim, job)) { /* its GPUs free are not enough: its CPUs and memory, node by node */
            clear = 0;
            for (int32_t k = 0; k < n_free && clear < need; k++)
                clear += clear_until[k] > until && gp_node_fits(sim, free_node[k], job);
        }
        for (int32_t h = 0; h < n_held && clear < need && !gp_res_binds(sim, job); h++)
            if (sim->node_free[free_node[held[h]]] >= gpus && clear_until[held[h]] > until) clear++;
        if (clear >= need) return 1;
    }
    return 0;
}

/*
 * A cycle asks will-run the same question many times (jobs of one size on the same candidates,
 * and each TRY_LATER step of a job), and the answer only changes when a job starts: answers are
 * kept by candidates, node count and the job's requests, in a table indexed by their hash (a
 * newer answer takes an older one's place), and dropped at every start. On deep queues a cycle
 * asks hundreds of distinct questions between starts (bench_slurm_scale.py --sizes gpu --load 1.2,
 * when this was added: 6.4 M will-run tests with the last 8 answers kept, 3.7 M with 256).
 */
enum { MEMO_SLOTS = 256 };

typedef struct {
    uint32_t epoch; /* the answer holds while it is the memo's epoch */
    int32_t need, gpus, cpus, cpu_step, mem;
    int32_t preempt_class; /* whose jobs a will-run test takes as gone (-1: none) */
    int preempts;
    double when;
    int64_t nodes_at; /* its chosen nodes in `arena` (when it fits) */
} MemoEntry;

typedef struct WillRunMemo {
    uint32_t epoch;
    MemoEntry entry[MEMO_SLOTS];
    uint64_t *candidates; /* MEMO_SLOTS x n_words */
    int32_t *arena;       /* the chosen nodes of the answers of this epoch, one after another */
    int64_t arena_len, arena_cap;
} WillRunMemo;

/* Forget every answer. */
static void memo_clear(WillRunMemo *memo) {
    if (++memo->epoch == 0) { /* wrapped: every entry is stale again */
        for (int32_t m = 0; m < MEMO_SLOTS; m++) memo->entry[m].epoch = 0;
        memo->epoch = 1;
    }
    memo->arena_len = 0;
}

static uint64_t mix(uint64_t h, uint64_t value) {
    h = (h ^ value) * UINT64_C(0x9E3779B97F4A7C15);
    return h ^ (h >> 29);
}

/* Room in the arena for `need` more nodes: it grows to a bound, then the answers start over. */
static int memo_room(Sim *sim, WillRunMemo *memo, int32_t need) {
    if (memo->arena_len + need <= memo->arena_cap) return 0;
    int64_t bound = (int64_t)MEMO_SLOTS * 256 > (int64_t)sim->total_nodes ? (int64_t)MEMO_SLOTS * 256
                                                                             : (int64_t)sim->total_nodes;
    if (memo->arena_len + need > bound) {
        memo_clear(memo); /* arena_len = 0, and need <= total_nodes <= bound */
        if (need <= memo->arena_cap) return 0;
    }
    int64_t cap = 2 * memo->arena_cap > memo->arena_len + need ? 2 * memo->arena_cap : memo->arena_len + need;
    if (cap > bound) cap = bound;
    int32_t *arena = PyMem_RawRealloc(memo->arena, (size_t)cap * sizeof(int32_t));
    if (!arena) {
        sim->out_of_memory = 1;
        return -1;
    }
    memo->arena = arena;
    memo->arena_cap = cap;
    return 0;
}

static double will_run_memo(Sim *sim, BackfillMap *bf, WillRunMemo *memo, const BackfillClock *clock,
                            const uint64_t *candidates, int32_t need, int32_t job, double now,
                            const RunEntry *ordered, int32_t n_running, int *preempts) {
    int32_t W = sim->n_words, gpus = sim->gpn[job], counted = gp_counts_res(sim, job);
    int32_t cpus = counted ? sim->job_cpus[job] : 0, cpu_step = counted ? sim->job_cpu_step[job] : 0;
    int32_t mem = counted ? sim->job_mem[job] : 0, cls = sim->preempt ? sim->preempt->preempt_class[job] : -1;
    uint64_t h = mix(0, (uint64_t)(uint32_t)need << 32 | (uint32_t)gpus);
    h = mix(h, (uint64_t)(uint32_t)cpus << 32 | (uint32_t)mem);
    h = mix(h, (uint64_t)(uint32_t)cpu_step << 32 | (uint32_t)cls);
    /* the candidates folded two ways the compiler vectorises (80,000 nodes are 1,250 words) */
    uint64_t folded_xor = 0, folded_sum = 0;
    for (int32_t w = 0; w < W; w++) {
        folded_xor ^= candidates[w];
        folded_sum += candidates[w];
    }
    h = mix(mix(h, folded_xor), folded_sum);
    int32_t m = (int32_t)(h & (MEMO_SLOTS - 1));
    MemoEntry *e = &memo->entry[m];
    uint64_t *kept = memo->candidates + (size_t)m * W;
    if (e->epoch == memo->epoch && e->need == need && e->gpus == gpus && e->cpus == cpus && e->cpu_step == cpu_step &&
        e->mem == mem && e->preempt_class == cls && memcmp(kept, candidates, (size_t)W * sizeof(uint64_t)) == 0) {
        if (e->when != INFINITY) memcpy(sim->node_scratch, memo->arena + e->nodes_at, (size_t)need * sizeof(int32_t));
        *preempts = e->preempts;
        return e->when;
    }
    double when = will_run(sim, bf, clock, candidates, need, job, now, ordered, n_running, preempts);
    if (when != INFINITY && memo_room(sim, memo, need) < 0) return when;
    *e = (MemoEntry){memo->epoch, need, gpus, cpus, cpu_step, mem, cls, *preempts, when, memo->arena_len};
    memcpy(kept, candidates, (size_t)W * sizeof(uint64_t));
    if (when != INFINITY) {
        memcpy(memo->arena + memo->arena_len, sim->node_scratch, (size_t)need * sizeof(int32_t));
        memo->arena_len += need;
    }
    return when;
}

/* Advance reservations (models.slurm.reservations) the job may not use over [from, until): their
 * nodes leave `nodes` (job_test_resv: a job's available nodes at a start time). */
static void drop_windowed(const Sim *sim, int32_t job, uint64_t *nodes, double from, double until) {
    for (int32_t w = 0; w < sim->n_words; w++)
        for (uint64_t b = nodes[w]; b; b &= b - 1) {
            int32_t node = 64 * w + __builtin_ctzll(b);
            if (gp_window_blocks_at(sim, node, job, from, until)) nodes[w] &= ~(UINT64_C(1) << (node & 63));
        }
}


typedef struct RunKey {
    double end;
    int64_t job_id;
    int32_t job;
} RunKey;

/* The engine's order of running jobs: planned end, then job id, then index. */
static int run_key_cmp(const void *pa, const void *pb) {
    const RunKey *a = pa, *b = pb;
    if (a->end != b->end) return a->end < b->end ? -1 : 1;
    if (a->job_id != b->job_id) return a->job_id < b->job_id ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

static RunKey run_key(const Sim *sim, int32_t job) { return (RunKey){sim->est_end[job], sim->job_id[job], job}; }

static int is_running(const Sim *sim, int32_t job) {
    int32_t pos = sim->est_pos[job];
    return pos >= 0 && pos < sim->est_len && sim->est_heap[pos] == job;
}

/*
 * The running jobs by planned end, in run_order. Between two cycles only a few jobs start and end,
 * so the last list is kept (bf->run_listed): the jobs still running keep their order, and the
 * ones started since are sorted and merged in, in O(R + new log new) rather than a walk of the
 * heap in O(R log R). A kept job whose planned end moved (a preemption's grace) can break the
 * order: then the list is rebuilt by walking the heap. While no planned end moved, the kept
 * entries hold as they are.
 */
static int32_t running_by_end(Sim *sim, BackfillMap *bf) {
    if (++bf->run_mark_epoch == 0) {
        memset(bf->run_mark, 0, (size_t)sim->n_jobs * sizeof(uint32_t));
        bf->run_mark_epoch = 1;
    }
    uint32_t mark = bf->run_mark_epoch;
    int32_t kept = 0, sorted = 1, moved = sim->ends_moved != bf->run_ends_moved;
    bf->run_ends_moved = sim->ends_moved;
    for (int32_t k = 0; k < bf->run_listed; k++) {
        int32_t job = bf->run_order[k].job;
        if (!is_running(sim, job)) continue;
        bf->run_mark[job] = mark;
        if (!moved) {
            bf->run_order[kept++] = bf->run_order[k];
            continue;
        }
        if (kept > 0) {
            RunKey before = run_key(sim, bf->run_order[kept - 1].job), here = run_key(sim, job);
            if (run_key_cmp(&before, &here) > 0) sorted = 0;
        }
        bf->run_order[kept++] = run_entry(sim, job); /* (its planned end may have moved) */
    }
    if (!sorted) {
        int32_t n_running = 0;
        gp_walk_begin(sim);
        for (int32_t job; (job = gp_walk_next(sim)) >= 0;) bf->run_order[n_running++] = run_entry(sim, job);
        return bf->run_listed = n_running;
    }
    int32_t fresh = 0;
    for (int32_t k = 0; k < sim->est_len; k++)
        if (bf->run_mark[sim->est_heap[k]] != mark) bf->run_fresh[fresh++] = run_key(sim, sim->est_heap[k]);
    qsort(bf->run_fresh, (size_t)fresh, sizeof(RunKey), run_key_cmp);
    /* merge from the back: kept jobs in run_order[0, kept), fresh ones in run_fresh */
    int32_t i = kept - 1, j = fresh - 1;
    for (int32_t out = kept + fresh - 1; j >= 0; out--) {
        if (i >= 0) {
            RunKey last_kept = run_key(sim, bf->run_order[i].job);
            if (run_key_cmp(&last_kept, &bf->run_fresh[j]) > 0) {
                bf->run_order[out] = bf->run_order[i--];
                continue;
            }
        }
        bf->run_order[out] = run_entry(sim, bf->run_fresh[j--].job);
    }
    return bf->run_listed = kept + fresh;
}

/* The nodes with a free GPU, each with the time until which no reservation of this cycle holds
 * it: the begin of the first record that lacks it. */
static int32_t free_nodes_clear(Sim *sim, BackfillMap *bf, int32_t *free_node, double *clear_until) {
    int32_t n_free = 0;
    const uint64_t *free_bits = gp_level_bits(sim, 1);
    for (int32_t w = 0; w < sim->n_words; w++)
        for (uint64_t b = free_bits[w]; b; b &= b - 1) {
            int32_t node = 64 * w + __builtin_ctzll(b);
            double until = INFINITY;
            for (int32_t k = 0; k < bf->map_len && until == INFINITY; k++)
                if (!(rec_bits(sim, bf, k)[w] >> (node & 63) & 1)) until = bf->map_begin[k];
            free_node[n_free] = node;
            clear_until[n_free++] = until;
        }
    return n_free;
}

/* bf_max_job_user (backfill.c:_job_exceeds_max_bf_param): at most `per_user` jobs of one user are
 * tested in a cycle (0: no limit); the ones beyond still count against bf_max_job_test. */
static int user_tests_reset(Sim *sim, BackfillMap *bf) {
    if (!bf->job_user) return 0;
    if (!bf->user_tested) bf->user_tested = gp_calloc(sim, (size_t)bf->n_users, sizeof(int32_t));
    if (!bf->user_tested) return -1;
    memset(bf->user_tested, 0, (size_t)bf->n_users * sizeof(int32_t));
    return 0;
}

static int user_may_test(BackfillMap *bf, int32_t job, int64_t per_user) {
    if (per_user <= 0 || !bf->job_user) return 1;
    int32_t *tested = bf->user_tested + bf->job_user[job];
    if (*tested >= per_user) return 0;
    (*tested)++;
    return 1;
}

void gp_backfill_map_free(BackfillMap *bf) {
    PyMem_RawFree(bf->map_begin);
    PyMem_RawFree(bf->map_end);
    PyMem_RawFree(bf->map_bits);
    PyMem_RawFree(bf->map_suffix);
    PyMem_RawFree(bf->map_count);
    PyMem_RawFree(bf->map_gain);
    PyMem_RawFree(bf->bits_scratch);
    PyMem_RawFree(bf->word_scratch);
    PyMem_RawFree(bf->run_order);
    if (bf->memo) {
        PyMem_RawFree(bf->memo->candidates);
        PyMem_RawFree(bf->memo->arena);
        PyMem_RawFree(bf->memo);
    }
    PyMem_RawFree(bf->run_fresh);
    PyMem_RawFree(bf->run_kept);
    PyMem_RawFree(bf->run_mark);
    PyMem_RawFree(bf->free_list);
    PyMem_RawFree(bf->prune_scratch);
    PyMem_RawFree(bf->map_clear);
    PyMem_RawFree(bf->user_tested);
}

void gp_backfill_map_cycle(Sim *sim, BackfillMap *bf, double now) {
    const BackfillClock *clock = &bf->clock;
    int64_t version = sim->state_version;
    /* the last cycle's decisions hold (and this one's map ends by quiet_ends_by): it starts nothing */
    if (!bf->full_cycles && version == bf->quiet_version && now <= bf->quiet_through && now < bf->quiet_before &&
        floor_res(clock, now + clock->window_s) <= bf->quiet_ends_by)
        return;
    bf->quiet_version = -1;
    Quiet quiet = {INFINITY, INFINITY, INFINITY};
    int32_t W = sim->n_words;
    if (!bf->bits_scratch) {
        /* 4 scratch bitmaps, 2 for the window */
        bf->bits_scratch = PyMem_RawCalloc(6 * (size_t)W, sizeof(uint64_t));
        bf->word_scratch = PyMem_RawCalloc((size_t)W, sizeof(int32_t));
        bf->memo = PyMem_RawCalloc(1, sizeof(WillRunMemo));
        if (bf->memo) bf->memo->candidates = PyMem_RawCalloc((size_t)MEMO_SLOTS * W, sizeof(uint64_t));
        /* every running job holds at least one GPU */
        int64_t gpus = (int64_t)sim->total_nodes * sim->node_gpus;
        size_t most_running = (size_t)(gpus < sim->n_jobs ? gpus : sim->n_jobs) + 1;
        bf->run_order = PyMem_RawCalloc(most_running, sizeof(RunEntry));
        bf->run_fresh = PyMem_RawCalloc(most_running, sizeof(RunKey));
        bf->run_kept = PyMem_RawCalloc(most_running, sizeof(RunEntry));
        bf->run_mark = PyMem_RawCalloc((size_t)sim->n_jobs + 1, sizeof(uint32_t));
        bf->free_list = PyMem_RawCalloc((size_t)sim->total_nodes, sizeof(int32_t));
        bf->map_clear = PyMem_RawCalloc(2 * (size_t)sim->total_nodes, sizeof(double));
        bf->prune_scratch = PyMem_RawCalloc((size_t)sim->node_gpus + 2 + (size_t)sim->total_nodes, sizeof(int32_t));
        if (!bf->bits_scratch || !bf->word_scratch || !bf->run_order || !bf->run_fresh || !bf->run_kept || !bf->run_mark || !bf->memo ||
            !bf->memo->candidates || !bf->free_list || !bf->map_clear || !bf->prune_scratch) {
            sim->out_of_memory = 1;
            return;
        }
    }
    uint64_t *all = bf->bits_scratch, *candidates = bf->bits_scratch + W, *chosen = bf->bits_scratch + 3 * (size_t)W;
    uint64_t *prefix = bf->bits_scratch + 4 * (size_t)W;
    Window win = {.behind = prefix + W};
    int32_t *free_node = bf->free_list;
    double *clear_until = bf->map_clear;
    WillRunMemo *memo = bf->memo;
    memo_clear(memo); /* the running jobs may have changed since the last cycle */
    for (int32_t w = 0; w < W; w++) {
        int32_t left = sim->total_nodes - 64 * w;
        all[w] = left >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << left) - 1);
    }
    int32_t n_running = -1; /* the running jobs by planned end: listed when will-run first needs them */

    bf->map_len = 0;
    if (map_reserve(sim, bf, 1) < 0 || user_tests_reset(sim, bf) < 0) return;
    bf->map_len = 1;
    bf->map_begin[0] = floor_res(clock, now);
    bf->map_end[0] = floor_res(clock, now + clock->window_s);
    memcpy(rec_bits(sim, bf, 0), all, (size_t)W * sizeof(uint64_t));
    bf->map_count[0] = sim->total_nodes;
    bf->map_gain[0] = 0;
    double map_end_s = bf->map_end[0];

    int32_t n_free = free_nodes_clear(sim, bf, free_node, clear_until);
    int recheck = 1;

    int64_t tested = 0;
    for (int32_t slot = gp_queue_first(sim); slot < sim->q_count && tested < clock->max_job_test; slot++) {
        int32_t need = sim->q_nodes[slot];
        if (need == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])) continue;
        tested++;
        if (!user_may_test(bf, sim->q_job[slot], clock->max_job_user)) continue;
        if (recheck && !sim->preempt) { /* a job that preempts needs no free node */
            int64_t budget = clock->max_job_test - tested + 1;
            if (sim->whole_jobs ? !any_could_start(sim, bf, slot, budget, now, clear_until, n_free)
                                : !any_could_start_gpus(sim, bf, slot, budget, now, free_node, clear_until, n_free))
                break;
            recheck = 0;
        }
        double limit = sim->q_estimate[slot];
        int32_t gpus = sim->gpn[sim->q_job[slot]];
        double start_at = now;
        int32_t first = first_ending_after(bf, now), beyond = first;
        window_reset(sim, &win, all, first);
        for (int tries = 0; tries < MAX_TRIES && !sim->out_of_memory; tries++) {
            /* `later`: the first map boundary after which a node of the window so far frees up,
             * looking no further than the first record that begins after start_at + limit (the
             * map holds still while a job is tried, and start_at only moves forward) */
            first = first_after(bf->map_end, first, bf->map_len, start_at);
            /* the first record beginning after the window */
            beyond = first_after(bf->map_begin, beyond > first ? beyond : first, bf->map_len, start_at + limit);
            quiet_used(&quiet, map_end_s, start_at);
            if (start_at == now && beyond < bf->map_len) /* a later now reaches no further record */
                quiet.before = fmin(quiet.before, bf->map_begin[beyond] - limit);
            /* A record of the window with fewer than `need` nodes fails this try, and every next one
             * whose window holds it. Those tries are known without their bitmaps: while no node
             * frees up, a record holds a subset of the one before it, so the next try is at the
             * end of the first record from `first` that is followed by a node it lacks (map_gain),
             * and the first try past the short record is at the end of the first such record
             * from the short one on. The tries in between count (MAX_TRIES), and the last of them
             * ends the job's search if that record lies beyond its window. */
            /* (not with advance reservations: a reservation's end is a try of its own, find_resv_end
             * below, which the shortcut's next try at a map boundary would pass over) */
            int32_t short_k = bf->full_tries || sim->reservations ? first - 1 : beyond - 1;
            while (short_k >= first && bf->map_count[short_k] >= need) short_k--;
            if (short_k >= first) {
                double last_start = start_at; /* the last try whose window holds the short record */
                int32_t skipped = 0;
                for (int32_t k = first; k < short_k; k++)
                    if (bf->map_gain[k]) {
                        last_start = bf->map_end[k];
                        skipped++;
                    }
                tries += skipped;
                if (tries >= MAX_TRIES) break;
                quiet_used(&quiet, map_end_s, last_start);
                int32_t frees = first_gain(bf, short_k, last_start + limit);
                if (frees < 0) break;
                start_at = bf->map_end[frees];
                first = frees + 1; /* (the first record ending after start_at) */
                continue;
            }
            double later = NAN;
            int32_t later_first = -1; /* the first record ending after `later` */
            if (!bf->full_tries) { /* (the same, by map_gain) */
                int32_t frees = first_gain(bf, first, start_at + limit); /* (up to `beyond`) */
                if (frees >= 0) {
                    later = bf->map_end[frees];
                    later_first = frees + 1;
                }
            } else {
                memcpy(prefix, all, (size_t)W * sizeof(uint64_t));
                for (int32_t k = first; k <= beyond && k + 1 < bf->map_len && isnan(later); k++) {
                    const uint64_t *bits = rec_bits(sim, bf, k), *next = rec_bits(sim, bf, k + 1);
                    for (int32_t w = 0; w < W; w++) {
                        prefix[w] &= bits[w];
                        if (next[w] & ~prefix[w]) later = bf->map_end[k];
                    }
                }
            }
            if (sim->reservations) {
                /* backfill.c:_attempt_backfill: when an advance reservation overlaps this try
                 * (job_test_resv's resv_overlap), the next try may also be one second after the
                 * first reservation end from start_at on, rounded up to bf_resolution
                 * (find_resv_end), if that is within the window and before `later` */
                double end = gp_reservation_end_after(sim, sim->q_job[slot], start_at, start_at + limit);
                double retry = isnan(end) ? NAN : ceil_res(clock, end) + 1;
                if (retry < map_end_s && (isnan(later) || retry < later)) {
                    later = retry;
                    later_first = -1;
                }
            }
            /* candidates: the nodes of every record of the window */
            window_move(sim, bf, &win, all, first, beyond - 1);
            window_and(sim, bf, &win, all, candidates);
            if (sim->reservations) drop_windowed(sim, sim->q_job[slot], candidates, start_at, start_at + limit);
            double when = INFINITY;
            int preempts = 0;
            if (holds_at_least(candidates, W, need)) {
                if (n_running < 0) n_running = running_by_end(sim, bf);
                when = will_run_memo(sim, bf, memo, clock, candidates, need, sim->q_job[slot], now, bf->run_order,
                                     n_running, &preempts);
                /* max(now + 1, a planned end): the same for a later now' only while now' + 1 <= it */
                if (when > now && when < INFINITY) quiet.through = fmin(quiet.through, when - 1);
            }
            if (when == INFINITY) {
                if (isnan(later)) break;
                start_at = later;
                if (later_first >= 0) first = later_first;
                continue;
            }
            if (preempts && start_at == now) {
                /* job_test.c:_will_run_test with preemptable jobs gone: it can start now by
                 * preempting jobs on its candidate nodes (select_nodes then preempts them) */
                int32_t job = sim->q_job[slot];
                int fits = !gp_preempt_awaits(sim, job, now) && gp_try_preempt(sim, slot, now, candidates);
                if (fits || gp_preempt_awaits(sim, job, now)) {
                    /* victims left or will leave: the running jobs and free nodes changed */
                    memo_clear(memo);
                    n_running = running_by_end(sim, bf);
                    n_free = free_nodes_clear(sim, bf, free_node, clear_until);
                    recheck = 1;
                    if (!fits) break; /* waiting out its victims' grace time: no reservation */
                    /* it starts now, below, on the best fit of its free candidates */
                    const uint64_t *usable = gp_usable_bits(sim, job);
                    for (int32_t w = 0; w < W; w++) chosen[w] = candidates[w] & usable[w];
                    gp_choose_nodes(sim, chosen, need, job, 0);
                    when = now;
                }
                if (!fits) break; /* its victims would not make room after all: no start, no plan */
            }
            if (when < start_at) when = start_at; /* (a later start preempting: planned then) */
            /* (a start now is neither later than `later` nor beyond bf_window) */
            if (!isnan(later) && when > later) {
                start_at = later;
                if (later_first >= 0) first = later_first;
                continue;
            }
            if (when > now + clock->window_s) { /* beyond bf_window: no reservation */
                quiet.before = fmin(quiet.before, when - clock->window_s);
                break;
            }
            /* the chosen nodes, as a bitmap (node_scratch is reused below) */
            memset(chosen, 0, (size_t)W * sizeof(uint64_t));
            for (int32_t k = 0; k < need; k++)
                chosen[sim->node_scratch[k] >> 6] |= UINT64_C(1) << (sim->node_scratch[k] & 63);
            if (when <= now) {
                int32_t job = sim->q_job[slot];
                gp_start_slot_on(sim, slot, now);
                memo_clear(memo); /* the running jobs and free nodes changed */
                /* later will-run tests of this cycle know it by its planned end */
                int32_t at = n_running++;
                while (at > 0 && bf->run_order[at - 1].end > sim->est_end[job]) {
                    bf->run_order[at] = bf->run_order[at - 1];
                    at--;
                }
                bf->run_order[at] = run_entry(sim, job);
                bf->run_listed = n_running;
                /* a job on whole nodes holds them in the map (backfill.c:_bf_reserve_running); one
                 * sharing nodes does not: later will-run tests see its GPUs busy until its end */
                if (gpus == sim->node_gpus)
                    add_reservation(sim, bf, clock, bf->map_begin[0], floor_res(clock, now + limit), chosen);
                int32_t kept = 0; /* the nodes it took leave the free ones when full */
                for (int32_t k = 0; k < n_free; k++)
                    if (sim->node_free[free_node[k]] > 0) {
                        free_node[kept] = free_node[k];
                        clear_until[kept++] = clear_until[k];
                    }
                n_free = kept;
                recheck = 1;
                break;
            }
            double from = floor_res(clock, when), until = floor_res(clock, when + limit);
            if (overlaps(sim, bf, chosen, from, until)) {
                start_at = when;
                continue;
            }
            add_reservation(sim, bf, clock, from, until, chosen);
            quiet.before = fmin(quiet.before, from); /* (from >= the map's begin: when > now) */
            /* it holds its nodes over [from, max(until, from + bf_resolution)), clipped to the map:
             * a later map that ends after `from` (when this one ends by then), or else after its
             * end, would hold them longer */
            quiet_used(&quiet, map_end_s, from >= map_end_s ? from : fmax(until, from + clock->resolution_s));
            /* its free nodes are no longer clear from its start (map records from `from` lack them),
             * unless it lies beyond the map's end (bf_window), where the map holds nothing */
            double held_from = from > bf->map_begin[0] ? from : bf->map_begin[0];
            for (int32_t k = 0; k < n_free && held_from < bf->map_end[bf->map_len - 1]; k++)
                if (chosen[free_node[k] >> 6] >> (free_node[k] & 63) & 1 && held_from < clear_until[k]) {
                    clear_until[k] = held_from;
                    recheck = 1;
                }
            break;
        }
    }
    if (version == sim->state_version && !sim->preempt && !sim->reservations && !sim->hold &&
        !sim->out_of_memory) {
        bf->quiet_version = version;
        bf->quiet_through = quiet.through;
        bf->quiet_before = quiet.before;
        bf->quiet_ends_by = quiet.ends_by;
    }
}
