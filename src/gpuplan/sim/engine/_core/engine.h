/*
 * gpuplan batch engine: the discrete-event core, and the interface of the pieces it calls.
 *
 * The core knows time, events and resources only: the clock, the event heaps (job ends, jobs
 * coming back to the queue), nodes with their resources (GPUs per node; a node may be off), the
 * queue (submit order, or the order a priority piece keeps) and the running set. Everything a
 * scheduler decides is a piece (sim/slurm/_core), chosen by the name users know, as Slurm's own
 * plugins are: a scheduling pass (sched/backfill), node choice (select/cons_tres), a queue order
 * (priority/multifactor), preemption (preempt/qos), QoS limits, advance reservations, lending,
 * topology. Each piece owns its state and reads its own settings by name (pieces.h); the core
 * reaches it through the small operation tables below, once per job start or end or once per
 * instant, never per node, except for the node-hold test of reservations (the only piece that
 * changes which nodes a job may use now).
 *
 * At each instant the core applies all job ends, then all arrivals, then calls the scheduling
 * pass, which reads the queue and the running set through the functions below and starts jobs with
 * gp_start_slot(). Free nodes per GPU level are two-level bitmaps, so a start or an end costs
 * O(nodes of the job / 64 + nodes of the cluster / 4096) for whole-node jobs.
 */
#ifndef GPUPLAN_ENGINE_H
#define GPUPLAN_ENGINE_H

#include <math.h>
#include <stdint.h>

typedef struct Sim Sim;

typedef struct {
    double time;
    int32_t job;
} GpEvent;

/* q_nodes value of a queue slot whose job has started: larger than any free count, so a
 * "does it fit" test skips it with no extra branch. */
#define GP_GONE INT32_MAX

/* ---- operation tables of the pieces ------------------------------------------------------- */

/* The scheduling pass (sched/...): called once per instant, after the ends and arrivals. */
typedef struct {
    void (*pass)(Sim *sim, void *state, double now);
    void (*free)(void *state);
} GpSchedOps;

/* Node choice for a job among candidate nodes (select/...): fills sim->node_scratch with `count`
 * nodes in ascending order and returns how many it found (fewer: no fit). `job` is the job placed
 * and `on_overlay` says whether the nodes' free resources are read on the overlay (a plan) or now.
 * A select piece that always takes the lowest-numbered candidates says so (lowest_numbered): the
 * core then takes them a bitmap word at a time. */
typedef struct {
    int32_t (*choose)(Sim *sim, void *state, const uint64_t *candidates, int32_t count, int32_t job, int on_overlay);
    int lowest_numbered;
} GpSelectOps;

/* Placement of multi-node jobs by groups of nodes (topology/...): of the `eligible` nodes in
 * node_scratch (ascending), keep `count`; returns how many (fewer: it waits). */
typedef struct {
    int32_t (*pick)(Sim *sim, void *state, int32_t eligible, int32_t count);
} GpPlaceOps;

/* Nodes held over time against some jobs (advance reservations): is `node` held against `job` over
 * [now, until)? Called with the instants in order, so a piece may forget what is over. */
typedef struct {
    int (*held)(Sim *sim, void *state, int32_t node, int32_t job, double now, double until);
} GpHoldOps;

/* What a piece does at the core's events; any entry may be NULL. */
typedef struct {
    /* the piece's next instant of its own (INFINITY: none) */
    double (*next_event)(Sim *sim, void *state);
    /* does the piece have instants to come that a queued job may be waiting for? */
    int (*may_wake)(const Sim *sim, const void *state);
    /* at each instant, before its job ends; -1 on error (sim->hook_error when Python raised) */
    int (*instant)(Sim *sim, void *state, double now);
    /* at each instant, after its arrivals and before the pass */
    void (*after_arrivals)(Sim *sim, void *state, double now);
    /* at each instant, after the pass */
    void (*after_pass)(Sim *sim, void *state, double now);
    /* a scheduling pass (a main pass, a backfill cycle) reads the queue (Slurm's build_job_queue) */
    void (*queue_read)(Sim *sim, void *state, double now);
    /* a job entered the queue at `slot` (last) */
    void (*job_queued)(Sim *sim, void *state, int32_t slot);
    void (*job_started)(Sim *sim, void *state, int32_t job, double now);
    void (*job_ended)(Sim *sim, void *state, int32_t job);
    /* a job left its nodes at `now` and is requeued, eligible again at `at` (Slurm gives it a new
     * SubmitTime, `now`, and its age restarts at `at`: job_mgr.c:_job_requeue_op) */
    void (*job_requeued)(Sim *sim, void *state, int32_t job, double now, double at);
    /* a job's end event fell due: 1 when the piece took over (a preempted job leaving early) */
    int (*end_due)(Sim *sim, void *state, int32_t job, double now);
    void (*free)(void *state);
    /* a job was given its nodes at `now` (its ranges): how long it waits on them before it runs
     * (nodes powering up: it runs, and its time limit counts, from then on, as Slurm resets a job's
     * start time when its nodes are up, job_mgr.c:job_config_fini) */
    double (*start_delay)(Sim *sim, void *state, int32_t job, double now);
} GpHooks;

typedef struct {
    const char *name;
    const GpHooks *hooks;
    void *state;
} GpPiece;

#define GP_MAX_PIECES 12

/* The states of the Slurm pieces that other pieces read (sim/slurm/_core): opaque to the core,
 * which only hands them to their operations. NULL when the piece is off. */
struct GpQos;
struct GpPreempt;
struct GpReservations;

struct Sim {
    /* Jobs, indexed in queue order. Times in seconds. */
    int32_t n_jobs;
    const double *submit;
    const double *run;      /* time the job occupies its nodes (already cut at its time limit) */
    const double *estimate; /* what the scheduler believes: the time limit, else the run time */
    const int32_t *nodes;
    const int32_t *gpus; /* GPUs of the whole job, for the busy-GPU timeline */
    const int64_t *job_id;
    /* per job, or NULL: 1 when its arrival queues no scheduling request (submitted ahead with
     * --begin, or held for a dependency: a scheduler on its own clock notices it at its next pass) */
    const uint8_t *quiet_arrival;

    /* Results per job. Every job fits the cluster (the caller rejects the others). */
    double *start;
    int64_t *range_first; /* index of the job's first (first node, count) pair in `ranges` */
    int32_t *range_count;
    int32_t *ranges; /* growable array of (first node, node count) pairs */
    int64_t ranges_len;
    int64_t ranges_cap;
    /* A job's current run: how long it runs when it starts (`run`, or what a requeued job has left)
     * and, when jobs may restart (gp_enable_restarts), when its current run started (else NULL). */
    const double *attempt_run;
    double *attempt_start;

    /* Cluster: total_nodes nodes of node_gpus GPUs. A job takes gpn[job] GPUs on each of its nodes:
     * node_gpus when nodes are allocated whole (OverSubscribe=EXCLUSIVE), fewer with per-GPU
     * allocation (select/cons_tres), where jobs share nodes. Per level g = 1..node_gpus a two-level
     * bitmap marks the nodes with at least g free GPUs, and count_ge[g] counts them; the nodes
     * wholly free are level node_gpus (free_nodes). CPUs and memory (below) are further resources
     * per node, beside node_free. */
    int32_t total_nodes;
    int32_t node_gpus;
    const int32_t *gpn; /* per job */
    int whole_nodes;    /* every job takes whole nodes and nodes are interchangeable: passes count nodes */
    int whole_jobs;     /* every job takes whole nodes (nodes may still differ: reservations, lending) */
    int32_t free_nodes; /* == count_ge[node_gpus] */
    int64_t busy_gpus;
    int16_t *node_free;     /* free GPUs per node */
    uint8_t *node_off;      /* per node: off (takes no job, shows no free GPU), or NULL: all on */
    int32_t *count_ge;      /* [0 .. node_gpus] */
    uint64_t *level_bits;   /* node_gpus x n_words: bit set = node has >= g free GPUs */
    uint64_t *level_summary; /* node_gpus x n_summary: bit w set = level word w has a set bit */
    int32_t n_words;
    int32_t n_summary;
    int32_t *node_scratch; /* nodes found for a job */
    /* Nodes powered down (power saving, power_save.c), a bitmap of n_words words, or NULL: every
     * node is up. A powered-down node takes a job, which then waits for it to boot (start_delay),
     * so node choice takes the nodes that are up first: node_scheduler.c:_pick_best_nodes puts
     * powered-down nodes in a node set of a higher scheduling weight. */
    uint64_t *power_down;
    uint64_t *power_scratch; /* n_words: candidates by power state */
    int32_t *power_nodes;    /* total_nodes: nodes set aside while the others are chosen */
    /* CPUs and memory (select/cons_tres, SelectTypeParameters=CR_Core or CR_Core_Memory), or NULL
     * job_cpus: not counted. Every node has node_cpus CPUs and node_mem MB; a job sharing nodes
     * (gpn < node_gpus) holds job_cpus[job] CPUs and job_mem[job] MB on each of its nodes and fits
     * a node only with that many free (job_test.c:can_job_run_on_node); its free CPUs, rounded down
     * to a multiple of job_cpu_step[job] (--cpus-per-task), are what select's best fit measures
     * (job_test.c:_eval_nodes). A job on whole GPUs needs idle nodes, whose CPUs and memory are
     * free: it is not counted. res_binds: some job may find a node with its GPUs free but too few
     * CPUs or too little memory, so a fit is tested node by node rather than by count_ge. */
    int32_t node_cpus;
    int32_t node_mem;
    const int32_t *job_cpus;
    const int32_t *job_cpu_step;
    const int32_t *job_mem;
    int res_binds;
    /* per job, or NULL: what last held it when its GPUs were free (GP_HELD_BY_CPUS, _MEMORY), 0 none */
    uint8_t *held_by;
    int32_t *cpu_free;
    int32_t *mem_free;
    uint64_t *usable_scratch; /* n_words: the nodes a job fits now (gp_usable_bits) */
    /* CPUs and MB held by running jobs (every job: AllocTRES cpu and mem), and the timeline's
     * columns of them (NULL: not recorded) */
    int64_t busy_cpus;
    int64_t busy_mem;
    int64_t *tl_busy_cpus;
    int64_t *tl_busy_mem;
    /* An overlay of free GPUs per node for "what if" plans (shadow times, backfill): a node's
     * overlay value is valid when its stamp equals the epoch, else it is node_free. */
    int16_t *ov_free;
    int32_t *ov_cpu; /* free CPUs and memory of the overlay, when they are counted */
    int32_t *ov_mem;
    uint32_t *ov_stamp;
    uint32_t ov_epoch;
    int32_t *ov_count; /* count_ge of the overlay, when this plan keeps it (ov_levels) */
    int ov_levels;

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
    int32_t q_cap;   /* queue slots allocated (requeued jobs take new slots) */

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

    /* Running jobs by (estimated end, job id): an indexed binary heap, so an end removes its job
     * in O(log R), and gp_walk_* visits jobs in that order without sorting the whole set. */
    int32_t *est_heap;
    int32_t *est_pos;
    int32_t est_len;
    double *est_end;
    int32_t *walk_heap; /* scratch for gp_walk_* */
    int32_t walk_len;

    /* The clock. A pass may ask to be called again at a time with no job event (a periodic
     * scheduler): wake_at. */
    double wake_at;
    double now;
    /* Scheduling requests (slurmctld's queue_job_scheduler counts them): a job submitted, a job
     * ended or preempted, a node back. A pass on its own clock serves them when it runs. */
    int64_t sched_requests;
    /* Bumped whenever what a scheduling pass reads may have changed: a job queued, started or
     * moved in the queue, a running job gone or its planned end moved, a node off or back. A pass
     * that started nothing can tell from it that the next one sees the same state (backfill_map.c:
     * quiet cycles). */
    int64_t state_version;
    /* bumped when a running job's planned end moves (gp_job_leaves_early) or a job starts again */
    int64_t ends_moved;
    /* instants with an event (not a wake-up alone), and whether a wake-up may start a queued job
     * with no new event (set by a pass on its own clock; the engine stops when none may) */
    int64_t events;
    int policy_waits;

    /* The pieces: the scheduling pass, node choice, and the optional ones. */
    const GpSchedOps *sched;
    void *sched_state;
    const GpSelectOps *select;
    void *select_state;
    const GpPlaceOps *place; /* NULL: no topology */
    void *place_state;
    int place_require; /* a multi-node job waits for one group that holds it (topology require) */
    const GpHoldOps *hold; /* NULL: no node is ever held */
    void *hold_state;
    GpPiece pieces[GP_MAX_PIECES]; /* hooks, called in this order */
    int32_t n_pieces;
    struct GpQos *qos;
    struct GpPreempt *preempt;
    struct GpReservations *reservations;

    int out_of_memory;
    int policy_error; /* a pass started a job that did not fit */
    int hook_error;   /* a piece's Python hook raised, or a signal's handler did (Ctrl-C) */
};

int gp_sim_init(Sim *sim, int32_t n_jobs, int32_t total_nodes, int32_t node_gpus);
void gp_sim_free(Sim *sim);
/* Attach a piece's hooks (and its state, freed with the engine); -1 when there are too many. */
int gp_add_piece(Sim *sim, const char *name, const GpHooks *hooks, void *state);
/* A scheduling pass begins: the pieces see the queue it reads (GpHooks.queue_read). */
void gp_queue_read(Sim *sim, double now);
/* PyMem_RawCalloc that flags sim->out_of_memory on failure (for pieces too) */
void *gp_calloc(Sim *sim, size_t count, size_t size);
/* Jobs may restart (requeue, suspend): keep when each run started, and run `attempt_run` (the work
 * each job has left) rather than `run`. */
int gp_enable_restarts(Sim *sim, const double *attempt_run);
/* Count CPUs and memory (see Sim): nodes of `node_cpus` CPUs and `node_mem` MB, jobs holding the
 * per-job arrays' CPUs and MB per node (and measured by free CPUs in multiples of `cpu_step`). */
int gp_enable_cpus(Sim *sim, int32_t node_cpus, int32_t node_mem, const int32_t *cpus, const int32_t *cpu_step,
                   const int32_t *mem, uint8_t *held_by);
/* Nodes may go off (lending): allocate node_off. */
int gp_enable_node_off(Sim *sim);
/* Nodes may be powered down (power saving): allocate power_down (all up) and its scratch. */
int gp_enable_power(Sim *sim);

/* ---- nodes ----------------------------------------------------------------------------------- */

/* Are the job's CPUs and memory counted (a job sharing nodes, with CPUs on)? */
static inline int gp_counts_res(const Sim *sim, int32_t job) {
    return sim->job_cpus && sim->gpn[job] < sim->node_gpus;
}
/* May the job find a node with its GPUs free but not its CPUs or memory? */
static inline int gp_res_binds(const Sim *sim, int32_t job) { return sim->res_binds && gp_counts_res(sim, job); }
/* Is `node` powered down (power saving on: power_down)? */
static inline int gp_powered_down(const Sim *sim, int32_t node) {
    return (int)((sim->power_down[node >> 6] >> (node & 63)) & 1);
}
/* Does `job` fit `node` now (GPUs, and CPUs and memory when counted)? */
static inline int gp_node_fits(const Sim *sim, int32_t node, int32_t job) {
    if (sim->node_off && sim->node_off[node]) return 0;
    if (sim->node_free[node] < sim->gpn[job]) return 0;
    return !gp_counts_res(sim, job) || (sim->cpu_free[node] >= sim->job_cpus[job] && sim->mem_free[node] >= sim->job_mem[job]);
}
/* The nodes `job` fits now, as a bitmap of n_words words (the GPU level when nothing else binds). */
const uint64_t *gp_usable_bits(Sim *sim, int32_t job);

/* Nodes for `job` (its nodes x its GPUs per node) now, running until `until`, among the nodes it
 * fits that no piece holds against it over its run: placed by topology, else chosen by the select
 * piece (for a job on whole GPUs whose select takes the lowest-numbered: those). Fills
 * sim->node_scratch; returns how many were found (at most the job's nodes). */
int32_t gp_find_nodes(Sim *sim, int32_t job, double until);
/* Start the job in queue slot `slot` now on the `count` nodes in sim->node_scratch. */
void gp_start_slot_on(Sim *sim, int32_t slot, double now);
/* Put a node off (it takes no job and shows no free GPU) or back on. */
void gp_node_set_off(Sim *sim, int32_t node, int off);
/* Does running `job` hold `node`? */
int gp_job_on_node(const Sim *sim, int32_t job, int32_t node);

/* The overlay (see Sim): begin a new plan, read a node, and add GPUs (and CPUs and memory) to
 * nodes (negative: take). A plan that keeps `levels` counts its nodes by free GPUs as it goes
 * (ov_count, for gp_overlay_fit_count); one that only reads nodes (a will-run test, thousands of
 * releases each) need not. */
void gp_overlay_begin(Sim *sim, int levels);
static inline int32_t gp_overlay_free(const Sim *sim, int32_t node) {
    if (sim->ov_stamp[node] == sim->ov_epoch) return sim->ov_free[node];
    return sim->node_off && sim->node_off[node] ? 0 : sim->node_free[node];
}
static inline int32_t gp_overlay_cpus(const Sim *sim, int32_t node) {
    return sim->ov_stamp[node] == sim->ov_epoch ? sim->ov_cpu[node] : sim->cpu_free[node];
}
static inline int32_t gp_overlay_mem(const Sim *sim, int32_t node) {
    return sim->ov_stamp[node] == sim->ov_epoch ? sim->ov_mem[node] : sim->mem_free[node];
}
/* Does `job` fit `node` on the overlay? */
static inline int gp_overlay_fits(const Sim *sim, int32_t node, int32_t job) {
    if (gp_overlay_free(sim, node) < sim->gpn[job]) return 0;
    return !gp_counts_res(sim, job) ||
           (gp_overlay_cpus(sim, node) >= sim->job_cpus[job] && gp_overlay_mem(sim, node) >= sim->job_mem[job]);
}
/* How many nodes `job` fits on the overlay. */
int32_t gp_overlay_fit_count(Sim *sim, int32_t job);
static inline void gp_overlay_add(Sim *sim, int32_t node, int32_t gpus, int32_t cpus, int32_t mem) {
    int32_t old = gp_overlay_free(sim, node), free = old + gpus;
    if (sim->ov_levels) { /* a node may go below 0 (preemption: a node put out of reach); ov_count counts from 0 */
        for (int32_t g = free + 1 > 0 ? free + 1 : 0; g <= old; g++) sim->ov_count[g]--;
        for (int32_t g = old + 1 > 0 ? old + 1 : 0; g <= free; g++) sim->ov_count[g]++;
    }
    if (sim->job_cpus && (cpus || mem || sim->ov_stamp[node] != sim->ov_epoch)) {
        int32_t old_cpus = gp_overlay_cpus(sim, node), old_mem = gp_overlay_mem(sim, node);
        sim->ov_cpu[node] = old_cpus + cpus;
        sim->ov_mem[node] = old_mem + mem;
    }
    sim->ov_free[node] = (int16_t)free;
    sim->ov_stamp[node] = sim->ov_epoch;
}
/* A job's GPUs (and CPUs and memory, when counted) on one node, or on all its nodes. */
static inline void gp_overlay_add_job_on(Sim *sim, int32_t node, int32_t job, int32_t sign) {
    int counted = gp_counts_res(sim, job);
    gp_overlay_add(sim, node, sign * sim->gpn[job], counted ? sign * sim->job_cpus[job] : 0,
                   counted ? sign * sim->job_mem[job] : 0);
}
void gp_overlay_add_job(Sim *sim, int32_t job, int32_t sign);

/* Choose `count` nodes for `job` among the `candidates` (a bitmap of n_words words), all of which
 * it fits: by topology when there is one and the job has several nodes, else by the select piece,
 * which reads the nodes' free CPUs now or, with `on_overlay`, on the overlay. Fills
 * sim->node_scratch in ascending order; returns how many (fewer than count: no fit). */
int32_t gp_choose_nodes(Sim *sim, const uint64_t *candidates, int32_t count, int32_t job, int on_overlay);
/* The nodes with at least `gpus` free GPUs, as a bitmap of n_words words. */
static inline const uint64_t *gp_level_bits(const Sim *sim, int32_t gpus) {
    return sim->level_bits + (size_t)(gpus - 1) * sim->n_words;
}
/* The nodes with all GPUs free. */
static inline const uint64_t *gp_free_bits(const Sim *sim) { return gp_level_bits(sim, sim->node_gpus); }

/* A job that did not fit now although enough nodes had its GPUs free: note whether its CPUs or its
 * memory were short (held_by). */
#define GP_HELD_BY_CPUS 1
#define GP_HELD_BY_MEMORY 2
void gp_note_held(Sim *sim, int32_t job, double until);

/* Does the job in slot `slot` fit now? (holes never fit) */
static inline int gp_fits_now(Sim *sim, int32_t slot) {
    int32_t nodes = sim->q_nodes[slot], job = sim->q_job[slot];
    if (nodes == GP_GONE || sim->count_ge[sim->gpn[job]] < nodes) return 0;
    if (!sim->hold && !(sim->place_require && nodes > 1) && !gp_res_binds(sim, job)) return 1;
    double until = sim->now + sim->q_estimate[slot];
    if (gp_find_nodes(sim, job, until) == nodes) return 1;
    if (gp_res_binds(sim, job)) gp_note_held(sim, job, until);
    return 0;
}

/* ---- event heaps and the job life cycle ------------------------------------------------------ */

/* Push onto a growable heap of events (time, then job), e.g. a piece's own. */
void gp_event_push(Sim *sim, GpEvent **heap, int32_t *len, int32_t *cap, GpEvent event);
GpEvent gp_event_pop(GpEvent *heap, int32_t *len);
/* A running job leaves its nodes now (ended, or vacated by a piece). */
void gp_job_leave(Sim *sim, int32_t job);
/* A job that left comes back to the queue at `at`; `resubmitted`: requeued (not resumed after a
 * suspension), which the pieces' job_requeued hooks hear of. */
void gp_requeue_at(Sim *sim, int32_t job, double at, int resubmitted);
/* Of `executed_s` seconds an evicted job ran, the work its checkpoints kept: the whole checkpoint
 * intervals (none, or an interval <= 0: nothing). The one rule for every model: Slurm's requeue
 * (preempt.c) and Kubernetes' eviction (sim/kubernetes/model.py, through _batchcore.checkpointed). */
static inline double gp_checkpointed(double executed_s, double interval_s) {
    return interval_s > 0 ? floor(executed_s / interval_s) * interval_s : 0.0;
}
/* A running job will leave at `leave`, before its run ends (GraceTime): its end event and its
 * place in the running set move. */
void gp_job_leaves_early(Sim *sim, int32_t job, double leave);

/*
 * Run to the end. At each instant: the pieces' instant hooks, all job ends, then all arrivals, the
 * pieces' after-arrival hooks, then one scheduling pass; then record (time, busy GPUs, queued
 * jobs) in the timeline when either changed. Instants are job arrivals, job ends, the pieces' own
 * events and the times passes ask for with gp_wake_at(). Returns the number of timeline rows, -1
 * when memory ran out, -2 when a pass started a job that did not fit, -3 when a piece's Python hook
 * raised (its exception is set), or -4 when the timeline capacity was too small.
 */
/* gp_run looks for pending signals (Ctrl-C) every GP_SIGNAL_CHECK_MASK + 1 instants */
#define GP_SIGNAL_CHECK_MASK 4095
/* Where gp_run writes the simulated time when it looks for signals (NULL: nowhere): a float64 the
 * command shows as progress, in memory shared with the process that started the run
 * (_batchcore.progress_clock sets it). */
extern double *gp_progress_clock;
int64_t gp_run(Sim *sim, double *tl_time, int64_t *tl_busy_gpus, int32_t *tl_queued, int64_t tl_capacity);

/* For passes: queue slots in order are gp_queue_first(sim) .. sim->q_count - 1; slot s holds
 * job sim->q_job[s] asking sim->q_nodes[s] nodes for sim->q_estimate[s] seconds, or a hole
 * (q_nodes[s] == GP_GONE). The first slot is the head, or q_count when the queue is empty. */
static inline int32_t gp_queue_first(Sim *sim) {
    while (sim->q_first < sim->q_count && sim->q_nodes[sim->q_first] == GP_GONE) {
        sim->q_first++;
        sim->q_holes--;
    }
    return sim->q_first;
}

/* Start the job in queue slot `slot` now, on the nodes the select piece chooses; the caller
 * checked that it fits. */
void gp_start_slot(Sim *sim, int32_t slot, double now);

/* Ask for a pass at time `t` (> now) even if no job arrives or ends then. */
static inline void gp_wake_at(Sim *sim, double t) {
    if (t > sim->now && t < sim->wake_at) sim->wake_at = t;
}

/* Walk running jobs in order of estimated end, then job id: begin, then next until -1. */
void gp_walk_begin(Sim *sim);
int32_t gp_walk_next(Sim *sim);

#endif
