/* Slurm preemption (preempt.c), as the scheduling passes and lending see it. */
#ifndef GPUPLAN_PREEMPT_H
#define GPUPLAN_PREEMPT_H

#include "engine.h"

enum { GP_PREEMPT_OFF, GP_PREEMPT_CANCEL, GP_PREEMPT_REQUEUE, GP_PREEMPT_SUSPEND };

typedef struct {
    /* the order in which running jobs are taken as victims (qsort comparator of preempt.c's Victim) */
    int (*victim_cmp)(const void *a, const void *b);
} GpPreemptOps;

/*
 * A job of class a may preempt a running job of class b when can_preempt[a * n + b]; victims are
 * taken in the plugin's order (victim_key: Slurm's preempt_p_get_prio); PreemptMode and GraceTime
 * per class of the victim.
 */
struct GpPreempt {
    const GpPreemptOps *ops;
    const int32_t *preempt_class; /* per job */
    int32_t n_classes;
    const uint8_t *can_preempt;   /* n x n */
    const uint8_t *preempt_mode;  /* per class: GP_PREEMPT_* of a victim of that class */
    const double *grace_s;        /* per class: GraceTime */
    const double *victim_key;     /* per job */
    const double *checkpoint_s;   /* per job: checkpoint interval, 0: none (restarts from zero) */
    double requeue_delay_s;       /* a requeued job is eligible again this long after it ends */
    double *work_left;            /* per job: run time still to do (less after a checkpointed requeue) */
    double *awaits_until;         /* per job: a preemptor waits for its victims' grace until then */
    uint8_t *vacating;            /* per job: preempted, in its grace time */
    double *end_out;              /* out per job: when it last ended */
    int32_t *preemptions;         /* out per job */
    double *lost_gpu_s;           /* out per job: GPU-seconds of work lost to preemption */
    int8_t *cancelled;            /* out per job: ended by preemption (PreemptMode=CANCEL) */
    void *victim_scratch;
};

/* May `job` preempt `other` (preempt_g_job_preempt_check: the job's QoS lists the other's, or its
 * partition's PriorityTier is higher)? No preemption piece: never. */
static inline int gp_may_preempt(const Sim *sim, int32_t job, int32_t other) {
    const struct GpPreempt *p = sim->preempt;
    return p && p->can_preempt[p->preempt_class[job] * p->n_classes + p->preempt_class[other]];
}

/* Preempt running jobs so that the job in queue slot `slot` (which does not fit now) can start,
 * on the nodes of `allowed` (a bitmap of n_words words; NULL: any node). Returns 1 when it fits
 * now (victims with no GraceTime left at once), 0 when it must wait (for victims' grace time, or
 * because preemptable jobs would not free enough nodes). */
int gp_try_preempt(Sim *sim, int32_t slot, double now, const uint64_t *allowed);

/* A preempted (or evicted) job leaves its nodes at `now`: cancelled, requeued (its work since the
 * last checkpoint lost), or suspended (resumed later with nothing lost). */
void gp_preempt_vacate(Sim *sim, int32_t job, double now, int mode);

/* Is `job` waiting out its victims' grace time at `now`? */
static inline int gp_preempt_awaits(const Sim *sim, int32_t job, double now) {
    return sim->preempt->awaits_until[job] > now;
}

#endif
