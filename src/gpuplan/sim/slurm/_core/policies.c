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
 * - "slurm": Slurm's own backfill (SchedulerType=sched/backfill). The main scheduler runs on its own
 *   clock (main_scheduler below: sched_interval, batch_sched_delay, default_queue_depth) in strict
 *   order, a blocked job blocking the partition, as "fifo" does at every event. Every bf_interval
 *   seconds a backfill cycle tests queued jobs in order, at most bf_max_job_test of them: each
 *   starts now if it fits now for its whole time limit without touching a reservation, else gets a
 *   reservation at the earliest time it fits, if that is within bf_window, so no job tested later
 *   can delay it, on Slurm's map of named nodes with its will-run test (backfill_map.c).
 */
#include <math.h>
#include <string.h>

#include "backfill_map.h"
#include "engine.h"

/*
 * The main scheduler: jobs in queue order start while they fit. A job that does not fit may preempt
 * (when preemption is on); otherwise it ends the pass: slurmctld's job_scheduler marks its
 * partition failed and takes the partition's nodes out of what later jobs may use in this pass
 * ("do not schedule more jobs in this partition or on nodes in this partition"), and every
 * partition of a pool spans all its nodes. A job held by a limit is skipped, blocking no one.
 */
static void main_pass(Sim *sim, double now, int64_t max_tested) {
    int64_t tested = 0;
    for (int32_t slot = gp_queue_first(sim); slot < sim->q_count; slot++) {
        if (sim->q_nodes[slot] == GP_GONE) continue;
        if (++tested > max_tested) break; /* default_queue_depth */
        if (gp_limit_reason(sim, sim->q_job[slot])) continue;
        if (!gp_fits_now(sim, slot) && !(sim->preempt_class && gp_try_preempt(sim, slot, now, NULL))) break;
        gp_start_slot(sim, slot, now);
    }
}

static void fifo_pass(Sim *sim, double now) { main_pass(sim, now, INT64_MAX); }

/* The first queued job no limit holds: the one that blocks the queue, or q_count. */
static int32_t blocked_head(Sim *sim) {
    int32_t slot = gp_queue_first(sim);
    while (slot < sim->q_count && (sim->q_nodes[slot] == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])))
        slot++;
    return slot;
}

static void easy_pass_per_gpu(Sim *sim, double now, int32_t head);

static void easy_pass(Sim *sim, double now) {
    fifo_pass(sim, now);
    int32_t head = blocked_head(sim);
    if (head == sim->q_count || sim->count_ge[1] == 0) return;
    if (!sim->whole_nodes) {
        easy_pass_per_gpu(sim, now, head);
        return;
    }

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

/*
 * EASY with per-GPU allocation or reservations: the same rule, with nodes no longer
 * interchangeable. The shadow time is the earliest of the running jobs' estimated ends and the
 * reservations' ends at which the head would fit, releasing running jobs in order of estimated
 * end on an overlay of free GPUs per node. A job that fits now and ends by the shadow time starts;
 * one that ends later starts only if, after taking its nodes from the overlay, the head still fits
 * at the shadow time. With whole nodes and no reservation this is the node-count rule above.
 */
static int head_fits_at(Sim *sim, int32_t head_job, double estimate, double at) {
    int32_t need = sim->nodes[head_job], gpus = sim->gpn[head_job];
    if (!sim->n_windows) return sim->ov_count[gpus] >= need;
    int32_t found = 0;
    for (int32_t node = 0; node < sim->total_nodes && found < need; node++)
        if (gp_overlay_free(sim, node) >= gpus && !gp_window_blocks_at(sim, node, head_job, at, at + estimate))
            found++;
    return found >= need;
}

static void easy_pass_per_gpu(Sim *sim, double now, int32_t head) {
    int32_t head_job = sim->q_job[head];
    double head_estimate = sim->q_estimate[head];
    double shadow = now;
    gp_overlay_begin(sim);
    gp_walk_begin(sim);
    int32_t running = gp_walk_next(sim), bound = sim->next_bound;
    while (!head_fits_at(sim, head_job, head_estimate, shadow)) {
        double running_end = running >= 0 ? sim->est_end[running] : INFINITY;
        while (bound < sim->n_bounds && sim->win_bounds[bound] <= shadow) bound++;
        double bound_time = bound < sim->n_bounds ? sim->win_bounds[bound] : INFINITY;
        if (running_end == INFINITY && bound_time == INFINITY) {
            shadow = INFINITY; /* cannot tell when: no reservation to protect */
            break;
        }
        if (running_end <= bound_time) {
            gp_overlay_add_job(sim, running, +1);
            running = gp_walk_next(sim);
            if (running_end > shadow) shadow = running_end;
        } else {
            shadow = bound_time;
        }
    }
    for (int32_t slot = head + 1; slot < sim->q_count && sim->count_ge[1] > 0; slot++) {
        if (!gp_fits_now(sim, slot) || gp_limit_reason(sim, sim->q_job[slot])) continue;
        int32_t job = sim->q_job[slot], nodes = sim->q_nodes[slot], gpus = sim->gpn[job];
        gp_find_nodes(sim, job, now + sim->q_estimate[slot]);
        if (now + sim->q_estimate[slot] > shadow) { /* still running at the shadow time */
            for (int32_t k = 0; k < nodes; k++) gp_overlay_add(sim, sim->node_scratch[k], -gpus);
            if (!head_fits_at(sim, head_job, head_estimate, shadow)) {
                for (int32_t k = 0; k < nodes; k++) gp_overlay_add(sim, sim->node_scratch[k], +gpus);
                continue;
            }
        }
        gp_start_slot_on(sim, slot, now);
    }
}

/* ---- Slurm backfill ------------------------------------------------------------------------ */

enum {
    BF_INTERVAL,
    BF_WINDOW,
    BF_RESOLUTION,
    BF_MAX_JOB_TEST,
    CLOCK_EPOCH,
    CONTROLLER_START,
    BF_MAX_JOB_USER,
    SCHED_INTERVAL,
    BATCH_SCHED_DELAY,
    DEFAULT_QUEUE_DEPTH,
};

/*
 * Slurm's main scheduler on its own clock. slurmctld's background thread
 * (controller.c:_slurmctld_background) ticks about once a second from the controller's start
 * (here: every whole second from `controller_start_s`, with no drift). On a tick it runs a full
 * pass when sched_interval seconds passed since the last full one; else, when a scheduling request
 * is queued (a submission, a job end; queue_job_scheduler) and batch_sched_delay seconds passed
 * since its last pass of either kind, a pass that tests at most default_queue_depth + 1 jobs
 * (job_scheduler.c:_schedule: `job_depth++ > def_job_limit`). sbatch never allocates at submission
 * (job_allocate with allocate=0 only queues a request), and a job that becomes eligible later
 * (--begin) queues none: the next pass notices it. sched_interval < 0 disables the periodic pass.
 * Events at a tick's instant are served by that tick.
 */
/* Requests queued since the main scheduler last looked: one pass serves them all. */
static void take_requests(Sim *sim) {
    if (sim->sched_requests == sim->main_requests_seen) return;
    sim->main_requests_seen = sim->sched_requests;
    sim->main_pending = 1;
}

static void main_scheduler(Sim *sim, double now) {
    double phase = sim->params[CONTROLLER_START], interval = sim->params[SCHED_INTERVAL];
    double delay = sim->params[BATCH_SCHED_DELAY];
    if (isnan(sim->main_next_full)) { /* the thread starts with the controller */
        sim->main_last_pass = phase;
        sim->main_next_full = interval > 0 ? phase + interval : INFINITY;
    }
    if (now > sim->main_next_full) { /* periodic passes no one woke for: no job was queued */
        double last = phase + floor((now - phase) / interval) * interval;
        if (last < now) {
            sim->main_last_pass = last;
            sim->main_next_full = last + interval;
            sim->main_pending = 0; /* what was asked before is served */
        } else {
            sim->main_next_full = last;
        }
    }
    take_requests(sim);
    int on_tick = now - phase == floor(now - phase);
    if (now == sim->main_next_full) {
        main_pass(sim, now, INT64_MAX);
        sim->main_last_pass = now;
        sim->main_pending = 0;
        sim->main_next_full = now + interval;
        /* a pass over the whole queue left nothing running: what waits is held until an event */
        if (sim->est_len == 0) sim->main_idle_events = sim->events;
    } else if (sim->main_pending && on_tick && now - sim->main_last_pass >= delay) {
        main_pass(sim, now, (int64_t)sim->params[DEFAULT_QUEUE_DEPTH] + 1);
        sim->main_last_pass = now;
        sim->main_pending = 0;
    }
    take_requests(sim); /* jobs the pass preempted ended */
    if (sim->main_pending) {
        double due = sim->main_last_pass + delay > now ? sim->main_last_pass + delay : now;
        due = phase + ceil(due - phase);
        if (due <= now) due += 1;
        gp_wake_at(sim, due);
    }
    if (gp_queue_first(sim) < sim->q_count) gp_wake_at(sim, sim->main_next_full);
}

static void slurm_backfill_cycle(Sim *sim, double now) {
    BackfillClock clock = {sim->params[CLOCK_EPOCH], sim->params[BF_RESOLUTION] > 0 ? sim->params[BF_RESOLUTION] : 1,
                           sim->params[BF_WINDOW], (int64_t)sim->params[BF_MAX_JOB_TEST],
                           (int64_t)sim->params[BF_MAX_JOB_USER]};
    gp_backfill_map_cycle(sim, &clock, now);
}

/*
 * Backfill cycles fall every bf_interval from slurmctld's start (the backfill thread's first cycle
 * comes bf_interval after it; `controller_start_s` on the workload's clock), every one while jobs
 * are queued: Slurm runs a cycle when something changed since the last (backfill.c:_more_work),
 * and a cycle that tests jobs sets their expected start, which is such a change. A cycle with the
 * same queue and running jobs can still decide differently later, as the plan is rounded to
 * bf_resolution from the current time.
 */
static void slurm_pass(Sim *sim, double now) {
    main_scheduler(sim, now);
    double interval = sim->params[BF_INTERVAL];
    if (interval > 0) { /* bf_interval=-1: no backfill */
        int queued = gp_queue_first(sim) < sim->q_count;
        if (now >= sim->policy_clock) {
            double phase = sim->params[CONTROLLER_START];
            double boundary = phase + floor((now - phase) / interval) * interval;
            int started = boundary >= phase + interval; /* the first cycle comes bf_interval after the start */
            if (now == boundary && started && queued) {
                slurm_backfill_cycle(sim, now);
                if (sim->params[SCHED_INTERVAL] <= 0 && sim->est_len == 0) sim->main_idle_events = sim->events;
            }
            sim->policy_clock = boundary + interval;
        }
        if (gp_queue_first(sim) < sim->q_count) gp_wake_at(sim, sim->policy_clock);
    }
    sim->policy_waits = sim->main_pending || sim->events != sim->main_idle_events;
}

const PolicyEntry GP_POLICIES[] = {
    {"fifo", fifo_pass},
    {"easy", easy_pass},
    {"slurm", slurm_pass},
    {0, 0},
};
