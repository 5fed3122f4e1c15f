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

/* One scheduling pass at time `now`. */
typedef void (*SchedulePass)(Sim *sim, double now);

#define GP_MAX_PARAMS 8

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

    /* Cluster. */
    int32_t total_nodes;
    int32_t free_nodes;
    int64_t busy_gpus;
    uint64_t *free_bits;    /* bit set = node free */
    uint64_t *free_summary; /* bit w set = free_bits[w] has a free node */
    int32_t n_words;
    int32_t n_summary;

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

    /* End events: binary heap of running jobs by (actual end, index). */
    int32_t *end_heap;
    int32_t end_len;
    double *end_time;

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
    /* Arrivals, starts and ends so far: a periodic pass can skip a cycle when nothing changed. */
    uint64_t changes;
    /* Policy state kept between passes (e.g. when the next periodic cycle is due). */
    double policy_clock;
    uint64_t policy_seen_changes;
    /* Scratch of the time-profile (node_space) built by reservation-based backfill. */
    double *profile_time;
    int32_t *profile_free;
    int32_t profile_len;

    /* Priority order of the queue (Slurm PriorityType=priority/multifactor), kept by priority.c;
     * off (FCFS: submit time, then job id) when prio_static is NULL. */
    const double *prio_static; /* per job: weighted job-size, partition and QoS factors */
    const int32_t *account;    /* per job: index of its account (association) */
    int32_t n_accounts;
    double prio_weight_age, prio_max_age, prio_weight_fairshare, prio_calc_period;
    double *priority;          /* per job: its priority when it was last computed */
    double *fs_factor;         /* per account: fair-share factor from the last recalculation */
    double *acct_usage;        /* per account: GPU-seconds used since the last recalculation */
    int64_t *acct_running_gpus;
    double usage_clock, next_recalc;
    /* fair-share hook: called with the GIL as hook(now, acct_usage) and fills fs_factor */
    int (*fairshare)(Sim *sim, double now);
    void *fairshare_state;

    /* Slurm QoS resource limits, per (QoS, user) group and per QoS: MaxTRESPerUser=gres/gpu,
     * MaxJobsPerUser, GrpTRES=gres/gpu (-1: none). Off when limit_group is NULL. */
    const int32_t *limit_group; /* per job */
    const int32_t *group_qos;   /* per group */
    const int64_t *qos_max_gpus_per_user, *qos_max_jobs_per_user, *qos_grp_gpus;
    int64_t *group_gpus, *group_jobs, *qos_gpus; /* running now */

    int out_of_memory;
    int policy_error; /* a pass started a job that did not fit */
    int hook_error;   /* the fair-share hook raised */
};

/* priority.c: the queue's priority order */
int gp_priority_init(Sim *sim);
void gp_priority_free(Sim *sim);
void gp_priority_insert(Sim *sim, int32_t slot_of_new_job);
int gp_priority_instant(Sim *sim, double now); /* accrue usage; recalculate when due; -1 on error */
void gp_priority_started(Sim *sim, int32_t job, int sign);

int gp_sim_init(Sim *sim, int32_t n_jobs, int32_t total_nodes);
void gp_sim_free(Sim *sim);

/*
 * Run to the end. At each instant: apply all job ends, then all arrivals, then one `pass`; then
 * record (time, busy GPUs, queued jobs) in the timeline when either changed. Instants are job
 * arrivals, job ends, and the times passes ask for with gp_wake_at(). Returns the number of
 * timeline rows, -1 when memory ran out, -2 when a pass started a job that did not fit, or -3
 * when the fair-share hook raised (its Python exception is set).
 */
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

/* Why a job may not start now whatever the free nodes (Slurm's pending reasons), or 0. A job held
 * by a limit is skipped by the schedulers: it blocks no one (slurmctld's job_scheduler does so). */
enum { GP_OK, GP_QOS_MAX_GPUS_PER_USER, GP_QOS_MAX_JOBS_PER_USER, GP_QOS_GRP_GPUS };
static inline int gp_limit_reason(const Sim *sim, int32_t job) {
    if (!sim->limit_group) return GP_OK;
    int32_t group = sim->limit_group[job], qos = sim->group_qos[group];
    int64_t gpus = sim->gpus[job];
    if (sim->qos_max_gpus_per_user[qos] >= 0 && sim->group_gpus[group] + gpus > sim->qos_max_gpus_per_user[qos])
        return GP_QOS_MAX_GPUS_PER_USER;
    if (sim->qos_max_jobs_per_user[qos] >= 0 && sim->group_jobs[group] + 1 > sim->qos_max_jobs_per_user[qos])
        return GP_QOS_MAX_JOBS_PER_USER;
    if (sim->qos_grp_gpus[qos] >= 0 && sim->qos_gpus[qos] + gpus > sim->qos_grp_gpus[qos]) return GP_QOS_GRP_GPUS;
    return GP_OK;
}

/* Ask for a pass at time `t` (> now) even if no job arrives or ends then. */
static inline void gp_wake_at(Sim *sim, double t) {
    if (t > sim->now && t < sim->wake_at) sim->wake_at = t;
}

/* Walk running jobs in order of estimated end, then job id: begin, then next until -1. */
void gp_walk_begin(Sim *sim);
int32_t gp_walk_next(Sim *sim);

#endif
