/*
 * Compiled scheduling passes for the batch engine, registered by name in GP_POLICIES.
 *
 * Both follow the literature's definitions so results compare with published simulators:
 * - "fifo": strict first-come-first-served. Start jobs from the head of the queue while the head
 *   fits; a head that does not fit blocks everyone behind it (Slurm with no backfill,
 *   SchedulerType=sched/builtin over a queue ordered by submit time).
 * - "easy": EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001). After the FIFO step, the head
 *   gets a reservation at the shadow time: running jobs are taken in order of estimated end (then
 *   job id) until enough nodes would be free. `extra` is the number of nodes then free beyond the
 *   head's need. Jobs behind the head are then started, in queue order, if they fit now and either
 *   end by their estimate at or before the shadow time, or need no more than `extra` (which they
 *   then use up), so the head never starts later than its reservation.
 * - "slurm": Slurm's own backfill (SchedulerType=sched/backfill). The main scheduler runs at every
 *   event as "fifo" does (strict order, a blocked job blocks the partition). Every bf_interval
 *   seconds a backfill cycle builds a time profile of free nodes (Slurm's node_space map) from the
 *   running jobs' time limits, then tests queued jobs in order, at most bf_max_job_test of them:
 *   each starts now if it fits now for its whole time limit without touching a reservation, else
 *   gets a reservation at the earliest time it fits, if that is within bf_window, so no job tested
 *   later can delay it. Times in the profile are whole multiples of bf_resolution (a running
 *   job's end is rounded up; a reservation spans start .. start + limit, rounded up).
 */
#include <math.h>
#include <string.h>

#include "engine.h"

static void fifo_pass(Sim *sim, double now) {
    for (int32_t slot = gp_queue_first(sim); slot < sim->q_count; slot++) {
        if (sim->q_nodes[slot] == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])) continue;
        if (sim->q_nodes[slot] > sim->free_nodes) break; /* the first that does not fit blocks the rest */
        gp_start_slot(sim, slot, now);
    }
}

/* The first queued job no limit holds: the one that blocks the queue, or q_count. */
static int32_t blocked_head(Sim *sim) {
    int32_t slot = gp_queue_first(sim);
    while (slot < sim->q_count && (sim->q_nodes[slot] == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])))
        slot++;
    return slot;
}

static void easy_pass(Sim *sim, double now) {
    fifo_pass(sim, now);
    int32_t head = blocked_head(sim);
    if (head == sim->q_count || sim->free_nodes == 0) return;

    int32_t need = sim->q_nodes[head];
    int32_t free_then = sim->free_nodes;
    double shadow = now;
    gp_walk_begin(sim);
    for (int32_t running; free_then < need && (running = gp_walk_next(sim)) >= 0;) {
        free_then += sim->nodes[running];
        shadow = sim->est_end[running];
    }
    int32_t extra = free_then - need;

    /* Backfill. Holes ask GP_GONE nodes, so the fit test skips them. */
    const int32_t *slot_nodes = sim->q_nodes;
    const double *slot_estimate = sim->q_estimate;
    int32_t free_now = sim->free_nodes, slots = sim->q_count;
    for (int32_t slot = head + 1; slot < slots && free_now > 0; slot++) {
        int32_t nodes = slot_nodes[slot];
        if (nodes > free_now || gp_limit_reason(sim, sim->q_job[slot])) continue;
        if (now + slot_estimate[slot] <= shadow) {
            gp_start_slot(sim, slot, now);
        } else if (nodes <= extra) {
            extra -= nodes;
            gp_start_slot(sim, slot, now);
        } else {
            continue;
        }
        free_now = sim->free_nodes;
    }
}

/* ---- Slurm backfill: a time profile of free nodes ------------------------------------------- */

enum { BF_INTERVAL, BF_WINDOW, BF_RESOLUTION, BF_MAX_JOB_TEST };

/* Make `t` a breakpoint of the profile (splitting the segment it falls in); returns its index. */
static int32_t profile_split(Sim *sim, double t) {
    double *time = sim->profile_time;
    int32_t *free = sim->profile_free;
    int32_t k = sim->profile_len - 1;
    while (k > 0 && time[k] > t) k--;
    if (time[k] == t) return k;
    memmove(time + k + 2, time + k + 1, (size_t)(sim->profile_len - k - 1) * sizeof(double));
    memmove(free + k + 2, free + k + 1, (size_t)(sim->profile_len - k - 1) * sizeof(int32_t));
    time[k + 1] = t;
    free[k + 1] = free[k];
    sim->profile_len++;
    return k + 1;
}

/* Take `nodes` from the profile over [start, end). */
static void profile_reserve(Sim *sim, double start, double end, int32_t nodes) {
    int32_t first = profile_split(sim, start);
    int32_t last = profile_split(sim, end);
    for (int32_t k = first; k < last; k++) sim->profile_free[k] -= nodes;
}

/* Earliest profile time >= now at which `nodes` are free for `duration` (slot ends rounded to
 * `resolution`), or INFINITY if none starts before `latest`. */
static double profile_earliest(const Sim *sim, int32_t nodes, double duration, double resolution,
                               double latest, double *end_out) {
    const double *time = sim->profile_time;
    const int32_t *free = sim->profile_free;
    int32_t len = sim->profile_len;
    for (int32_t i = 0; i < len && time[i] < latest;) {
        double start = time[i];
        double end = floor((start + duration + resolution - 1) / resolution) * resolution;
        int32_t j = i;
        while (j < len && time[j] < end && free[j] >= nodes) j++;
        if (j == len || time[j] >= end) {
            *end_out = end;
            return start;
        }
        i = j + 1; /* segment j is too full: no start before its end works */
    }
    return INFINITY;
}

static void slurm_backfill_cycle(Sim *sim, double now) {
    double resolution = sim->params[BF_RESOLUTION] > 0 ? sim->params[BF_RESOLUTION] : 1;
    double latest = now + sim->params[BF_WINDOW];
    int64_t max_test = (int64_t)sim->params[BF_MAX_JOB_TEST];

    /* node_space: free nodes now, and at each running job's limit (rounded up) the nodes it frees */
    sim->profile_len = 1;
    sim->profile_time[0] = now;
    sim->profile_free[0] = sim->free_nodes;
    gp_walk_begin(sim);
    for (int32_t job; (job = gp_walk_next(sim)) >= 0;) {
        double end = ceil(sim->est_end[job] / resolution) * resolution;
        /* a job that started this instant with no time to run still holds its nodes now */
        if (end <= now) end = (floor(now / resolution) + 1) * resolution;
        int32_t k = sim->profile_len - 1;
        if (sim->profile_time[k] != end) {
            k = sim->profile_len++;
            sim->profile_time[k] = end;
            sim->profile_free[k] = sim->profile_free[k - 1];
        }
        sim->profile_free[k] += sim->nodes[job];
    }

    /* Reservations matter only to later jobs of this cycle, and only by stopping them from
     * starting now: once no node is free now, the rest of the cycle could start nothing. */
    int64_t tested = 0;
    for (int32_t slot = gp_queue_first(sim); slot < sim->q_count && tested < max_test && sim->free_nodes > 0;
         slot++) {
        int32_t nodes = sim->q_nodes[slot];
        if (nodes == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])) continue;
        tested++;
        double end;
        /* a slot lasts at least a second, as Slurm's time limits are at least a minute */
        double duration = sim->q_estimate[slot] > 1 ? sim->q_estimate[slot] : 1;
        double start = profile_earliest(sim, nodes, duration, resolution, latest, &end);
        if (start == INFINITY) continue; /* beyond bf_window: no reservation */
        profile_reserve(sim, start, end, nodes);
        if (start == now) gp_start_slot(sim, slot, now);
    }
}

/*
 * Backfill cycles fall on multiples of bf_interval. A cycle that follows no arrival, start or end
 * since the previous cycle began would decide nothing new (the profile and the queue are the same,
 * so no job can start now and reservations stay), so such cycles are skipped and the engine is only
 * woken for a cycle after something changed. Results equal running every cycle (tested against a
 * reference that does).
 */
static void slurm_pass(Sim *sim, double now) {
    fifo_pass(sim, now); /* the main scheduler, at every event */
    double interval = sim->params[BF_INTERVAL];
    if (interval <= 0) return; /* bf_interval=-1: no backfill */
    if (now >= sim->policy_clock) {
        double boundary = floor(now / interval) * interval;
        int queued = gp_queue_first(sim) < sim->q_count;
        if (now == boundary && queued && sim->changes != sim->policy_seen_changes) {
            /* taken before the cycle: jobs it starts leave the queue, so with bf_max_job_test
             * the next cycle may test jobs this one did not reach */
            sim->policy_seen_changes = sim->changes;
            slurm_backfill_cycle(sim, now);
        }
        sim->policy_clock = boundary + interval;
    }
    if (gp_queue_first(sim) < sim->q_count && sim->changes != sim->policy_seen_changes)
        gp_wake_at(sim, sim->policy_clock);
}

const PolicyEntry GP_POLICIES[] = {
    {"fifo", fifo_pass},
    {"easy", easy_pass},
    {"slurm", slurm_pass},
    {0, 0},
};
