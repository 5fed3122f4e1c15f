/*
 * gpuplan batch engine: the discrete-event core shared by the compiled scheduling policies.
 *
 * The engine knows time, events and cluster state only: jobs arrive (in queue order: submit time,
 * then job id), start when a policy says so, and end. A policy is one function, called once per
 * instant after the engine has applied all job ends and then all arrivals of that instant. It reads
 * the queue and the running set through the functions below and starts jobs with gp_start_slot().
 *
 * Nodes are whole units (exclusive allocation, Slurm's OverSubscribe=EXCLUSIVE): a job of N nodes
 * takes the N lowest-numbered free nodes at once, all-or-nothing. Free nodes are a two-level bitmap,
 * so a start or an end costs O(nodes of the job / 64 + nodes of the cluster / 4096).
 */
#ifndef GPUPLAN_ENGINE_H
#define GPUPLAN_ENGINE_H

#include <stdint.h>

typedef struct Sim Sim;
struct RunKey;

typedef struct {
    double time;
    int32_t job;
} GpEvent;

/* One scheduling pass at time `now`. */
typedef void (*SchedulePass)(Sim *sim, double now);

#define GP_MAX_PARAMS 16

typedef struct {
    const char *name;
    SchedulePass pass;
} PolicyEntry;

/* q_nodes value of a queue slot whose job has started: larger than any free count, so a
 * "does it fit" test skips it with no extra branch. */
#define GP_GONE INT32_MAX

/* Compiled policies, by name; the list ends with a {NULL, NULL} entry (policies.c). */
extern const PolicyEntry GP_POLICIES[];

struct Sim {
    /* Jobs, indexed in queue order. Times in seconds. */
    int32_t n_jobs;
    const double *submit;
    const double *run;      /* time the job occupies its nodes (already cut at its time limit) */
    const double *estimate; /* what the scheduler believes: the time limit, else the run time */
    const int32_t *nodes;
    const int32_t *gpus; /* GPUs of the whole job, for the busy-GPU timeline */
    const int64_t *job_id;

    /* Results per job. Every job fits the cluster (the caller rejects the others). */
    double *start;
    int64_t *range_first; /* index of the job's first (first node, count) pair in `ranges` */
    int32_t *range_count;
    int32_t *ranges; /* growable array of (first node, node count) pairs */
    int64_t ranges_len;
    int64_t ranges_cap;

    /* Cluster: total_nodes nodes of node_gpus GPUs. A job takes gpn[job] GPUs on each of its nodes:
     * node_gpus when nodes are allocated whole (OverSubscribe=EXCLUSIVE), fewer with per-GPU
     * allocation (select/cons_tres), where jobs share nodes. Per level g = 1..node_gpus a two-level
     * bitmap marks the nodes with at least g free GPUs, and count_ge[g] counts them; the nodes
     * wholly free are level node_gpus (free_nodes). */
    int32_t total_nodes;
    int32_t node_gpus;
    const int32_t *gpn; /* per job */
    int whole_nodes;    /* every job takes whole nodes: passes use node counts only */
    int whole_jobs;     /* every job takes whole nodes (nodes may still differ: reservations, lending) */
    int32_t free_nodes; /* == count_ge[node_gpus] */
    int64_t busy_gpus;
    int16_t *node_free;     /* free GPUs per node */
    int32_t *count_ge;      /* [0 .. node_gpus] */
    uint64_t *level_bits;   /* node_gpus x n_words: bit set = node has >= g free GPUs */
    uint64_t *level_summary; /* node_gpus x n_summary: bit w set = level word w has a set bit */
    int32_t n_words;
    int32_t n_summary;
    int32_t *node_scratch; /* nodes found for a job */
    /* An overlay of free GPUs per node for "what if" plans (shadow times, backfill): a node's
     * overlay value is valid when its stamp equals the epoch, else it is node_free. */
    int16_t *ov_free;
    uint32_t *ov_stamp;
    uint32_t ov_epoch;
    int32_t *ov_count; /* count_ge of the overlay */

    /* Pending queue: slots [q_first, q_count) in queue order, as parallel arrays, so a backfill
     * scan reads memory in sequence. A started job leaves a hole (q_nodes == GP_GONE); the engine
     * closes the holes after a pass once they outnumber the queued jobs. */
    int32_t *q_job;
    int32_t *q_nodes;
    double *q_estimate;
    int32_t q_first;
    int32_t q_count;
    int32_t q_len;   /* queued jobs */
    int32_t q_holes; /* holes in [q_first, q_count) */

    /* End events: binary heap of (time, job) by time, then job. An entry whose time is no longer
     * the job's end_time (preemption moved it) is stale and skipped when popped. */
    GpEvent *end_heap;
    int32_t end_len;
    int32_t end_cap;
    double *end_time; /* per job: when its current run ends (its run, or its preemption) */
    /* Requeued and resumed jobs waiting to re-enter the queue: heap of (time, job). */
    GpEvent *requeue_heap;
    int32_t requeue_len;
    int32_t requeue_cap;
    int32_t q_cap; /* queue slots allocated (requeued jobs take new slots) */

    /* Running jobs by (estimated end, job id): an indexed binary heap, so an end removes its job
     * in O(log R), and gp_walk_* visits jobs in that order without sorting the whole set. */
    int32_t *est_heap;
    int32_t *est_pos;
    int32_t est_len;
    double *est_end;
    int32_t *walk_heap; /* scratch for gp_walk_* */
    int32_t walk_len;

    /* Settings of the policy, in the order its Python registration names them. */
    double params[GP_MAX_PARAMS];
    /* A pass may ask to be called again at a time with no job event (a periodic scheduler). */
    double wake_at;
    double now;
    /* Policy state kept between passes (e.g. when the next periodic cycle is due). */
    double policy_clock;
    /* Scheduling requests, as slurmctld's queue_job_scheduler() counts them: a job submitted, a job
     * ended or preempted, a lent node back. A policy on its own clock serves them when it runs. */
    int64_t sched_requests;
    /* per job, or NULL: 1 when its arrival queues no request (submitted ahead with --begin, or held
     * for a dependency: slurmctld notices it became eligible at its next pass) */
    const uint8_t *quiet_arrival;
    /* The Slurm main scheduler's clock (policies.c): its last pass, its next periodic full pass
     * (NaN before the first call), and the requests seen so far / still to serve. */
    double main_last_pass, main_next_full;
    int64_t main_requests_seen, main_idle_events;
    int main_pending;
    /* instants with an event (not a wake-up alone), and whether a wake-up may start a queued job
     * with no new event (set by a policy on its own clock; the engine stops when none may) */
    int64_t events;
    int policy_waits;
    /* Slurm's backfill map of named nodes (backfill_map.c, whole-node pools): records [begin, end)
     * with a bitmap of the nodes no reservation of this cycle holds, n_words words each; scratch
     * bitmaps; the running jobs in order of planned end. Allocated on the first cycle. */
    double *map_begin, *map_end;
    uint64_t *map_bits;
    uint64_t *map_suffix; /* per record, n_words: the window's suffix intersections (backfill_map.c) */
    int32_t map_len, map_cap;
    uint64_t *bits_scratch; /* 4 x n_words */
    int32_t *run_order;  /* the running jobs by planned end: run_listed of them, kept between cycles */
    int32_t run_listed;
    uint32_t *run_mark; /* per job: listed in this listing (run_mark_epoch) */
    uint32_t run_mark_epoch;
    struct RunKey *run_fresh; /* jobs started since the last listing, to sort and merge */
    int32_t *memo_nodes; /* the will-run memo's node lists */
    int32_t *free_list;  /* the nodes with a free GPU (for the cycle's early end) */
    int32_t *prune_scratch; /* free nodes by free GPUs, and those a reservation holds (early end) */
    double *map_clear;   /* per free node: until when no reservation of this cycle holds it; scratch */
    int32_t *run_start, *run_len; /* runs of consecutive candidate nodes (best fit) */

    /* Node choice for whole-node jobs: 0, the lowest-numbered free nodes; 1, Slurm's best fit over
     * runs of consecutive free nodes (select/cons_tres and select/linear, job_test.c:_eval_nodes). */
    int best_fit;
    /* per job: its user (bf_max_job_user), or NULL; and jobs of each user tested in this cycle */
    const int32_t *job_user;
    int32_t n_users;
    int32_t *user_tested;

    /* Priority order of the queue (Slurm PriorityType=priority/multifactor), kept by priority.c;
     * off (FCFS: submit time, then job id) when prio_static is NULL. */
    const double *prio_static; /* per job: weighted job-size, partition and QoS factors */
    const int32_t *account;    /* per job: index of its account (association) */
    int32_t n_accounts;
    double prio_weight_age, prio_max_age, prio_weight_fairshare, prio_calc_period;
    double *priority;          /* per job: its priority when it was last computed */
    double *fs_factor;         /* per account: fair-share factor from the last recalculation */
    double *acct_usage;        /* per account: GPU-seconds used since the last recalculation */
    double *acct_running_gpus; /* per account: GPUs running x their QoS UsageFactor */
    const double *usage_gpus;  /* per job: its GPUs x UsageFactor */
    double usage_clock, next_recalc, last_recalc;
    double prio_calc_phase; /* recalculations at prio_calc_phase + k x prio_calc_period (slurmctld's start) */
    /* AccountingStorageEnforce without "limits": a job's use between the last recalculation and its
     * end is never counted (acct_policy.c returns before priority_p_job_end) */
    int tick_usage_only;
    /* fair-share hook: called with the GIL as hook(now, acct_usage) and fills fs_factor */
    int (*fairshare)(Sim *sim, double now);
    void *fairshare_state;

    /* Slurm QoS resource limits, per (QoS, user) group and per QoS: MaxTRESPerUser=gres/gpu,
     * MaxJobsPerUser, GrpTRES=gres/gpu (-1: none). Off when limit_group is NULL. */
    const int32_t *limit_group; /* per job */
    const int32_t *group_qos;   /* per group */
    const int64_t *qos_max_gpus_per_user, *qos_max_jobs_per_user, *qos_grp_gpus;
    int64_t *group_gpus, *group_jobs, *qos_gpus; /* running now */
    int8_t *held_reason; /* out per job: the last limit that held it (GP_QOS_*), or GP_OK */

    /* Preemption (PreemptType=preempt/partition_prio or preempt/qos), off when preempt_class is
     * NULL. A job of class a may preempt a running job of class b when can_preempt[a * n + b];
     * victims are taken in order of victim_key (Slurm's preempt_p_get_prio: tier or QoS priority
     * << 16 + nodes, smallest first), then youngest first; PreemptMode and GraceTime per class. */
    const int32_t *preempt_class; /* per job */
    int32_t n_preempt_classes;
    const uint8_t *can_preempt;   /* n x n */
    const uint8_t *preempt_mode;  /* per class: GP_PREEMPT_* of a victim of that class */
    const double *grace_s;        /* per class: GraceTime */
    const double *victim_key;     /* per job */
    const double *checkpoint_s;   /* per job: checkpoint interval, 0: none (restarts from zero) */
    double requeue_delay_s;       /* a requeued job is eligible again this long after it ends */
    double *work_left;            /* per job: run time still to do (less after a checkpointed requeue) */
    double *attempt_start;        /* per job: when its current run started */
    double *awaits_until;         /* per job: a preemptor waits for its victims' grace until then */
    uint8_t *vacating;            /* per job: preempted, in its grace time */
    double *end_out;              /* out per job: when it last ended */
    int32_t *preemptions;         /* out per job */
    double *lost_gpu_s;           /* out per job: GPU-seconds of work lost to preemption */
    int8_t *cancelled;            /* out per job: ended by preemption (PreemptMode=CANCEL) */
    void *victim_scratch;

    /* Advance reservations (scontrol create reservation): windows [win_start, win_end) on named
     * nodes, for some accounts' jobs (bit a of win_accounts: account a, < 64) or for none (0:
     * maintenance). A job may use a
     * node only if no window it may not use overlaps its run (now .. now + estimate). Windows of a
     * node are listed by start (CSR: node_win_ids[node_win_offsets[n] .. [n + 1]]) and do not
     * overlap. Off when n_windows is 0. */
    int32_t n_windows;
    const double *win_start, *win_end;
    const uint64_t *win_accounts;
    const int32_t *job_account; /* per job; -1: in no reservation */
    const int64_t *node_win_offsets;
    const int32_t *node_win_ids;
    int32_t *node_win_next; /* per node: windows before this one are over */
    const double *win_bounds; /* every window start and end, sorted: instants to schedule at */
    int32_t n_bounds, next_bound;

    /* Nodes lent to another side (hybrid lending): at drain_time[k] drain_delta[k] > 0 nodes leave
     * (idle ones first, highest-numbered first; a busy node takes no new job and its jobs are
     * requeued drain_grace_s later) or -drain_delta[k] come back (the
     * last lent first). A node that is off takes no job. Off when n_drains is 0. */
    int32_t n_drains, next_drain;
    const double *drain_time;
    const int32_t *drain_delta;
    double drain_grace_s;
    uint8_t *node_off;
    int32_t *lent_stack;
    int32_t lent_len;
    GpEvent *evict_heap; /* (time, node): requeue the jobs still on a lent node */
    int32_t evict_len, evict_cap;

    /* Network topology (topology/block, topology/tree): nodes [k * block_nodes, (k + 1) *
     * block_nodes) hang off block (leaf switch) k. A multi-node job goes to the block with the
     * fewest eligible nodes that holds it (best fit), else across the fewest blocks; with
     * block_require a job of at most block_nodes nodes waits for one block. Off when 0. */
    int32_t block_nodes;
    int block_require;
    int32_t *block_count;         /* scratch per block */
    int32_t *block_nodes_scratch; /* scratch per node */

    int out_of_memory;
    int policy_error; /* a pass started a job that did not fit */
    int hook_error;   /* the fair-share hook raised, or a signal's handler did (Ctrl-C) */
};

/* priority.c: the queue's priority order */
int gp_priority_init(Sim *sim);
void gp_priority_free(Sim *sim);
void gp_priority_insert(Sim *sim, int32_t slot_of_new_job);
int gp_priority_instant(Sim *sim, double now); /* accrue usage; recalculate when due; -1 on error */
void gp_priority_started(Sim *sim, int32_t job, int sign);

int gp_sim_init(Sim *sim, int32_t n_jobs, int32_t total_nodes, int32_t node_gpus);

/* Nodes for `job` (its nodes x its GPUs per node) now, running until `until`: the lowest-numbered
 * nodes with that many free GPUs and no advance reservation the job may not use overlapping its
 * run. Fills sim->node_scratch; returns how many were found (at most the job's nodes). */
int32_t gp_find_nodes(Sim *sim, int32_t job, double until);
/* Is `node` held over [from, until) by a reservation `job` may not use? (for plans ahead of now) */
int gp_window_blocks_at(const Sim *sim, int32_t node, int32_t job, double from, double until);
/* Start the job in queue slot `slot` now on the `count` nodes in sim->node_scratch. */
void gp_start_slot_on(Sim *sim, int32_t slot, double now);

/* The overlay (see Sim): begin a new plan, read a node, and add GPUs to nodes (negative: take). */
void gp_overlay_begin(Sim *sim);
static inline int32_t gp_overlay_free(const Sim *sim, int32_t node) {
    if (sim->ov_stamp[node] == sim->ov_epoch) return sim->ov_free[node];
    return sim->node_off && sim->node_off[node] ? 0 : sim->node_free[node];
}
void gp_overlay_add(Sim *sim, int32_t node, int32_t gpus);
void gp_overlay_add_job(Sim *sim, int32_t job, int32_t sign); /* its GPUs on its nodes */

/* Choose `count` nodes among the `candidates` (a bitmap of n_words words) for a whole-node job:
 * by topology block when there is one, else by best fit (or the lowest-numbered without best_fit).
 * Fills sim->node_scratch in ascending order; returns how many (fewer than count: no fit). */
int32_t gp_choose_nodes(Sim *sim, const uint64_t *candidates, int32_t count);
/* The nodes with at least `gpus` free GPUs, as a bitmap of n_words words. */
static inline const uint64_t *gp_level_bits(const Sim *sim, int32_t gpus) {
    return sim->level_bits + (size_t)(gpus - 1) * sim->n_words;
}
/* The nodes with all GPUs free. */
static inline const uint64_t *gp_free_bits(const Sim *sim) { return gp_level_bits(sim, sim->node_gpus); }

/* Does the job in slot `slot` fit now? (holes never fit) */
static inline int gp_fits_now(Sim *sim, int32_t slot) {
    int32_t nodes = sim->q_nodes[slot], job = sim->q_job[slot];
    if (nodes == GP_GONE || sim->count_ge[sim->gpn[job]] < nodes) return 0;
    if (!sim->n_windows && !(sim->block_require && nodes > 1)) return 1;
    return gp_find_nodes(sim, job, sim->now + sim->q_estimate[slot]) == nodes;
}
void gp_sim_free(Sim *sim);

/*
 * Run to the end. At each instant: apply all job ends, then all arrivals, then one `pass`; then
 * record (time, busy GPUs, queued jobs) in the timeline when either changed. Instants are job
 * arrivals, job ends, and the times passes ask for with gp_wake_at(). Returns the number of
 * timeline rows, -1 when memory ran out, -2 when a pass started a job that did not fit, -3
 * when the fair-share hook raised (its Python exception is set), or -4 when the timeline capacity
 * was too small.
 */
/* gp_run looks for pending signals (Ctrl-C) every GP_SIGNAL_CHECK_MASK + 1 instants */
#define GP_SIGNAL_CHECK_MASK 4095
int64_t gp_run(Sim *sim, SchedulePass pass, double *tl_time, int64_t *tl_busy_gpus,
               int32_t *tl_queued, int64_t tl_capacity);

/* For policies: queue slots in order are gp_queue_first(sim) .. sim->q_count - 1; slot s holds
 * job sim->q_job[s] asking sim->q_nodes[s] nodes for sim->q_estimate[s] seconds, or a hole
 * (q_nodes[s] == GP_GONE). The first slot is the head, or q_count when the queue is empty. */
static inline int32_t gp_queue_first(Sim *sim) {
    while (sim->q_first < sim->q_count && sim->q_nodes[sim->q_first] == GP_GONE) {
        sim->q_first++;
        sim->q_holes--;
    }
    return sim->q_first;
}

/* Start the job in queue slot `slot` now, on the lowest-numbered free nodes; the caller checked
 * that it fits. */
void gp_start_slot(Sim *sim, int32_t slot, double now);

enum { GP_PREEMPT_OFF, GP_PREEMPT_CANCEL, GP_PREEMPT_REQUEUE, GP_PREEMPT_SUSPEND };

/* Preempt running jobs so that the job in queue slot `slot` (which does not fit now) can start,
 * on the nodes of `allowed` (a bitmap of n_words words; NULL: any node). Returns 1 when it fits
 * now (victims with no GraceTime left at once), 0 when it must wait (for victims' grace time, or
 * because preemptable jobs would not free enough nodes). */
int gp_try_preempt(Sim *sim, int32_t slot, double now, const uint64_t *allowed);

/* Why a job may not start now whatever the free nodes (Slurm's pending reasons), or 0. A job held
 * by a limit is skipped by the schedulers: it blocks no one (slurmctld's job_scheduler does so). */
enum { GP_OK, GP_QOS_MAX_GPUS_PER_USER, GP_QOS_MAX_JOBS_PER_USER, GP_QOS_GRP_GPUS };
static inline int gp_limit_reason(const Sim *sim, int32_t job) {
    if (!sim->limit_group) return GP_OK;
    int32_t group = sim->limit_group[job], qos = sim->group_qos[group];
    int64_t gpus = sim->gpus[job];
    int reason = GP_OK;
    if (sim->qos_max_gpus_per_user[qos] >= 0 && sim->group_gpus[group] + gpus > sim->qos_max_gpus_per_user[qos])
        reason = GP_QOS_MAX_GPUS_PER_USER;
    else if (sim->qos_max_jobs_per_user[qos] >= 0 && sim->group_jobs[group] + 1 > sim->qos_max_jobs_per_user[qos])
        reason = GP_QOS_MAX_JOBS_PER_USER;
    else if (sim->qos_grp_gpus[qos] >= 0 && sim->qos_gpus[qos] + gpus > sim->qos_grp_gpus[qos])
        reason = GP_QOS_GRP_GPUS;
    if (reason) sim->held_reason[job] = (int8_t)reason; /* the last limit that held it, for jobs.parquet */
    return reason;
}

/* bf_max_job_user (backfill.c:_job_exceeds_max_bf_param): at most `per_user` jobs of one user are
 * tested in a backfill cycle (0: no limit); the ones beyond still count against bf_max_job_test.
 * gp_user_tests_reset at the start of a cycle; gp_user_may_test counts the job when it may. */
int gp_user_tests_reset(Sim *sim);
static inline int gp_user_may_test(Sim *sim, int32_t job, int64_t per_user) {
    if (per_user <= 0 || !sim->job_user) return 1;
    int32_t *tested = sim->user_tested + sim->job_user[job];
    if (*tested >= per_user) return 0;
    (*tested)++;
    return 1;
}

/* Ask for a pass at time `t` (> now) even if no job arrives or ends then. */
static inline void gp_wake_at(Sim *sim, double t) {
    if (t > sim->now && t < sim->wake_at) sim->wake_at = t;
}

/* Walk running jobs in order of estimated end, then job id: begin, then next until -1. */
void gp_walk_begin(Sim *sim);
int32_t gp_walk_next(Sim *sim);

#endif
