/*
 * The scheduling passes (the sched pieces), registered by name in GP_SCHED_PLUGINS.
 *
 * Both follow the literature's definitions so results compare with published simulators:
 * - sched/builtin: strict first-come-first-served. Start jobs from the head of the queue while the head
 *   fits; a head that does not fit blocks everyone behind it (Slurm with no backfill,
 *   SchedulerType=sched/builtin over a queue ordered by submit time).
 * - sched/easy: EASY backfilling (Lifka 1995; Mu'alem and Feitelson 2001). After the FIFO step, the head
 *   gets a reservation at the shadow time: running jobs are taken in order of estimated end (then
 *   job id) until enough nodes would be free. `extra` is the number of nodes then free beyond the
 *   head's need. Jobs behind the head are then started, in queue order, if they fit now and either
 *   end by their estimate at or before the shadow time, or need no more than `extra` (which they
 *   then use up), so the head never starts later than its reservation.
 * - sched/backfill: Slurm's own backfill (SchedulerType=sched/backfill). The main scheduler runs on its own
 *   clock (main_scheduler below: sched_interval, batch_sched_delay, default_queue_depth) in strict
 *   order, a blocked job blocking the partition, as sched/builtin does at every event. Every bf_interval
 *   seconds a backfill cycle tests queued jobs in order, at most bf_max_job_test of them: each
 *   starts now if it fits now for its whole time limit without touching a reservation, else gets a
 *   reservation at the earliest time it fits, if that is within bf_window, so no job tested later
 *   can delay it, on Slurm's map of named nodes with its will-run test (backfill_map.c).
 */
#include <math.h>
#include <string.h>

#include "backfill_map.h"
#include "plugins.h"
#include "preempt.h"
#include "qos.h"
#include "reservations.h"

/*
 * The main scheduler: jobs in queue order start while they fit. A job that does not fit may preempt
 * (when preemption is on); otherwise it ends the pass: slurmctld's job_scheduler marks its
 * partition failed and takes the partition's nodes out of what later jobs may use in this pass
 * ("do not schedule more jobs in this partition or on nodes in this partition"), and every
 * partition of a pool spans all its nodes. A job held by a limit is skipped, blocking no one.
 */
static void main_pass(Sim *sim, double now, int64_t max_tested) {
    int64_t tested = 0;
    gp_queue_read(sim, now);
    for (int32_t slot = gp_queue_first(sim); slot < sim->q_count; slot++) {
        if (sim->q_nodes[slot] == GP_GONE) continue;
        if (++tested > max_tested) break; /* default_queue_depth */
        if (gp_limit_reason(sim, sim->q_job[slot])) continue;
        if (!gp_fits_now(sim, slot) && !(sim->preempt && gp_try_preempt(sim, slot, now, NULL))) break;
        gp_start_slot(sim, slot, now);
    }
}

static void fifo_pass(Sim *sim, void *state, double now) {
    (void)state;
    main_pass(sim, now, INT64_MAX);
}

/* The first queued job no limit holds: the one that blocks the queue, or q_count. */
static int32_t blocked_head(Sim *sim) {
    int32_t slot = gp_queue_first(sim);
    while (slot < sim->q_count && (sim->q_nodes[slot] == GP_GONE || gp_limit_reason(sim, sim->q_job[slot])))
        slot++;
    return slot;
}

static void easy_pass_per_gpu(Sim *sim, double now, int32_t head);

static void easy_pass(Sim *sim, void *state, double now) {
    fifo_pass(sim, state, now);
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
    int32_t need = sim->nodes[head_job];
    if (!sim->reservations) return gp_overlay_fit_count(sim, head_job) >= need;
    int32_t found = 0;
    for (int32_t node = 0; node < sim->total_nodes && found < need; node++)
        if (gp_overlay_fits(sim, node, head_job) && !gp_window_blocks_at(sim, node, head_job, at, at + estimate))
            found++;
    return found >= need;
}

static void easy_pass_per_gpu(Sim *sim, double now, int32_t head) {
    int32_t head_job = sim->q_job[head];
    double head_estimate = sim->q_estimate[head];
    double shadow = now;
    gp_overlay_begin(sim, 1);
    gp_walk_begin(sim);
    const struct GpReservations *resv = sim->reservations;
    int32_t n_bounds = resv ? resv->n_bounds : 0;
    const double *win_bounds = resv ? resv->win_bounds : NULL;
    int32_t running = gp_walk_next(sim), bound = resv ? resv->next_bound : 0;
    while (!head_fits_at(sim, head_job, head_estimate, shadow)) {
        double running_end = running >= 0 ? sim->est_end[running] : INFINITY;
        while (bound < n_bounds && win_bounds[bound] <= shadow) bound++;
        double bound_time = bound < n_bounds ? win_bounds[bound] : INFINITY;
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
        int32_t job = sim->q_job[slot], nodes = sim->q_nodes[slot];
        gp_find_nodes(sim, job, now + sim->q_estimate[slot]);
        if (now + sim->q_estimate[slot] > shadow) { /* still running at the shadow time */
            for (int32_t k = 0; k < nodes; k++) gp_overlay_add_job_on(sim, sim->node_scratch[k], job, -1);
            if (!head_fits_at(sim, head_job, head_estimate, shadow)) {
                for (int32_t k = 0; k < nodes; k++) gp_overlay_add_job_on(sim, sim->node_scratch[k], job, +1);
                continue;
            }
        }
        gp_start_slot_on(sim, slot, now);
    }
}

/* ---- Slurm backfill ------------------------------------------------------------------------ */

/* sched/backfill's settings (SchedulerParameters, by name) and its state between passes. */
typedef struct {
    double bf_interval;      /* bf_interval_s; <= 0: no backfill */
    /* main_loop_start_s / backfill_start_s: when slurmctld's background thread (the main
     * scheduler's loop) and its backfill thread started, on the workload's clock (NaN: at
     * controller_start_s, slurmctld's start) */
    double main_phase, bf_phase;
    double sched_interval;   /* sched_interval_s: between full main passes; <= 0: none */
    double batch_sched_delay; /* batch_sched_delay_s */
    int64_t default_queue_depth;
    /* The main scheduler's clock: its last pass, its next periodic full pass (NaN before the first
     * call), and the requests seen so far / still to serve. */
    double main_last_pass, main_next_full;
    int64_t main_requests_seen, main_idle_events;
    int main_pending;
    double next_cycle; /* when the next backfill cycle is due */
    BackfillMap map;   /* bf_window, bf_resolution, bf_max_job_test, bf_max_job_user, the epoch */
} SlurmSched;

/*
 * Slurm's main scheduler on its own clock. slurmctld's background thread
 * (controller.c:_slurmctld_background) ticks about once a second from its own start, a fraction of
 * a second after the controller's (here: every whole second from `main_loop_start_s`, with no
 * drift; its start counts as a full pass). On a tick it runs a full
 * pass when sched_interval seconds passed since the last full one; else, when a scheduling request
 * is queued (a submission, a job end; queue_job_scheduler) and batch_sched_delay seconds passed
 * since its last pass of either kind, a pass that tests at most default_queue_depth + 1 jobs
 * (job_scheduler.c:_schedule: `job_depth++ > def_job_limit`). sbatch never allocates at submission
 * (job_allocate with allocate=0 only queues a request), and a job that becomes eligible later
 * (--begin) queues none: the next pass notices it. sched_interval < 0 disables the periodic pass.
 * Events at a tick's instant are served by that tick.
 */
/* Requests queued since the main scheduler last looked: one pass serves them all. */
static void take_requests(Sim *sim, SlurmSched *sched) {
    if (sim->sched_requests == sched->main_requests_seen) return;
    sched->main_requests_seen = sim->sched_requests;
    sched->main_pending = 1;
}

static void main_scheduler(Sim *sim, SlurmSched *sched, double now) {
    double phase = sched->main_phase, interval = sched->sched_interval;
    double delay = sched->batch_sched_delay;
    if (isnan(sched->main_next_full)) { /* the thread starts */
        sched->main_last_pass = phase;
        sched->main_next_full = interval > 0 ? phase + interval : INFINITY;
    }
    if (now > sched->main_next_full) { /* periodic passes no one woke for: no job was queued */
        double last = phase + floor((now - phase) / interval) * interval;
        if (last < now) {
            sched->main_last_pass = last;
            sched->main_next_full = last + interval;
            sched->main_pending = 0; /* what was asked before is served */
        } else {
            sched->main_next_full = last;
        }
    }
    take_requests(sim, sched);
    int on_tick = now - phase == floor(now - phase);
    if (now == sched->main_next_full) {
        main_pass(sim, now, INT64_MAX);
        sched->main_last_pass = now;
        sched->main_pending = 0;
        sched->main_next_full = now + interval;
        /* a pass over the whole queue left nothing running: what waits is held until an event */
        if (sim->est_len == 0) sched->main_idle_events = sim->events;
    } else if (sched->main_pending && on_tick && now - sched->main_last_pass >= delay) {
        main_pass(sim, now, sched->default_queue_depth + 1);
        sched->main_last_pass = now;
        sched->main_pending = 0;
    }
    /* The jobs a pass preempted ended: each victim's epilog complete calls schedule() at once
     * (proc_req.c:_slurm_rpc_epilog_complete), a pass batch_sched_delay does not gate (it gates only
     * queue_job_scheduler's requests) and the preempting pass stands for here; they queue none. */
    sched->main_requests_seen = sim->sched_requests;
    if (sched->main_pending) {
        double due = sched->main_last_pass + delay > now ? sched->main_last_pass + delay : now;
        due = phase + ceil(due - phase);
        if (due <= now) due += 1;
        gp_wake_at(sim, due);
    }
    if (gp_queue_first(sim) < sim->q_count) gp_wake_at(sim, sched->main_next_full);
}

/*
 * Backfill cycles fall every bf_interval from the backfill thread's start (its first cycle comes
 * bf_interval after it; `backfill_start_s` on the workload's clock), every one while jobs
 * are queued: Slurm runs a cycle when something changed since the last (backfill.c:_more_work),
 * and a cycle that tests jobs sets their expected start, which is such a change. A cycle with the
 * same queue and running jobs can still decide differently later, as the plan is rounded to
 * bf_resolution from the current time.
 */
static void slurm_pass(Sim *sim, void *state, double now) {
    SlurmSched *sched = state;
    main_scheduler(sim, sched, now);
    double interval = sched->bf_interval;
    if (interval > 0) { /* bf_interval=-1: no backfill */
        int queued = gp_queue_first(sim) < sim->q_count;
        if (now >= sched->next_cycle) {
            double phase = sched->bf_phase;
            double boundary = phase + floor((now - phase) / interval) * interval;
            int started = boundary >= phase + interval; /* the first cycle comes bf_interval after the start */
            if (now == boundary && started && queued) {
                int64_t requests = sim->sched_requests;
                gp_queue_read(sim, now);
                gp_backfill_map_cycle(sim, &sched->map, now);
                if (sim->sched_requests != requests) { /* it preempted: the victims' epilog */
                    main_pass(sim, now, sched->default_queue_depth + 1); /* complete runs one */
                    sched->main_requests_seen = sim->sched_requests;
                }
                if (sched->sched_interval <= 0 && sim->est_len == 0) sched->main_idle_events = sim->events;
            }
            sched->next_cycle = boundary + interval;
        }
        if (gp_queue_first(sim) < sim->q_count) gp_wake_at(sim, sched->next_cycle);
    }
    sim->policy_waits = sched->main_pending || sim->events != sched->main_idle_events;
}

static void slurm_free(void *state) {
    SlurmSched *sched = state;
    if (!sched) return;
    gp_backfill_map_free(&sched->map);
    PyMem_RawFree(sched);
}

static const GpSchedOps BUILTIN = {fifo_pass, NULL};
static const GpSchedOps EASY = {easy_pass, NULL};
static const GpSchedOps BACKFILL = {slurm_pass, slurm_free};

static int builtin_setup(Sim *sim, GpSettings *s) {
    (void)s;
    sim->sched = &BUILTIN;
    return 0;
}

static int easy_setup(Sim *sim, GpSettings *s) {
    (void)s;
    sim->sched = &EASY;
    return 0;
}

/* Settings (named as slurm.conf's SchedulerParameters, in seconds; SlurmSettings.params):
 * bf_interval_s, bf_window_s, bf_resolution_s, bf_max_job_test, bf_max_job_user, clock_epoch_s,
 * controller_start_s, main_loop_start_s and backfill_start_s (NaN: controller_start_s),
 * sched_interval_s, batch_sched_delay_s, default_queue_depth; users (int32 per
 * job, for bf_max_job_user), optional; full_cycles, optional: run every backfill cycle, quiet
 * ones too; full_tries, optional: make every try of a job's search in full, those a short record
 * decides too (the same schedule either way: for the tests that show it). */
static int backfill_setup(Sim *sim, GpSettings *s) {
    SlurmSched sched = {0};
    BackfillClock *clock = &sched.map.clock;
    double resolution, controller_start;
    void *users;
    PyObject *full_cycles = NULL, *full_tries = NULL;
    Py_ssize_t n = s->n_jobs;
    if (gp_read_double(s, "bf_interval_s", &sched.bf_interval) < 0 ||
        gp_read_double(s, "bf_window_s", &clock->window_s) < 0 ||
        gp_read_double(s, "bf_resolution_s", &resolution) < 0 ||
        gp_read_int(s, "bf_max_job_test", &clock->max_job_test) < 0 ||
        gp_read_int(s, "bf_max_job_user", &clock->max_job_user) < 0 ||
        gp_read_double(s, "clock_epoch_s", &clock->epoch_s) < 0 ||
        gp_read_double(s, "controller_start_s", &controller_start) < 0 ||
        gp_read_double(s, "main_loop_start_s", &sched.main_phase) < 0 ||
        gp_read_double(s, "backfill_start_s", &sched.bf_phase) < 0 ||
        gp_read_double(s, "sched_interval_s", &sched.sched_interval) < 0 ||
        gp_read_double(s, "batch_sched_delay_s", &sched.batch_sched_delay) < 0 ||
        gp_read_int(s, "default_queue_depth", &sched.default_queue_depth) < 0 ||
        gp_read_array(s, "users", 4, n, 0, 1, &users, NULL) < 0 ||
        gp_read_object(s, "full_cycles", 1, &full_cycles) < 0 ||
        gp_read_object(s, "full_tries", 1, &full_tries) < 0)
        return -1;
    sched.map.quiet_version = -1;
    if (full_cycles && (sched.map.full_cycles = PyObject_IsTrue(full_cycles)) < 0) return -1;
    if (full_tries && (sched.map.full_tries = PyObject_IsTrue(full_tries)) < 0) return -1;
    clock->resolution_s = resolution > 0 ? resolution : 1;
    if (isnan(sched.main_phase)) sched.main_phase = controller_start;
    if (isnan(sched.bf_phase)) sched.bf_phase = controller_start;
    sched.main_next_full = NAN;
    if (users) { /* per job: its user's index, for bf_max_job_user */
        const int32_t *user = users;
        if (gp_check_indices(user, n, INT32_MAX, "users: job index %zd has a negative user") < 0) return -1;
        int32_t n_users = 0;
        for (Py_ssize_t j = 0; j < n; j++)
            if (user[j] >= n_users) n_users = user[j] + 1;
        sched.map.job_user = user;
        sched.map.n_users = n_users;
    }
    SlurmSched *state = PyMem_RawMalloc(sizeof(SlurmSched));
    if (!state) {
        PyErr_NoMemory();
        return -1;
    }
    *state = sched;
    sim->sched = &BACKFILL;
    sim->sched_state = state;
    return 0;
}

const GpPlugin GP_SCHED_PLUGINS[] = {
    {"sched/builtin", "strict FIFO: start from the head while the head fits", builtin_setup},
    {"sched/easy", "EASY backfill: the head reserves at its shadow time, others backfill", easy_setup},
    {"sched/backfill", "Slurm backfill, with the main scheduler on slurmctld's clock", backfill_setup},
    {NULL, NULL, NULL},
};
