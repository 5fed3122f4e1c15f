/* Slurm QoS resource limits (qos.c), as the scheduling passes see them. */
#ifndef GPUPLAN_QOS_H
#define GPUPLAN_QOS_H

#include "engine.h"

/*
 * Limits per (QoS, user) group and per QoS: MaxTRESPerUser=gres/gpu, MaxJobsPerUser,
 * GrpTRES=gres/gpu (-1: none), against the usage of the jobs running now, counted as jobs start
 * and end.
 */
struct GpQos {
    const int32_t *limit_group; /* per job */
    const int32_t *group_qos;   /* per group */
    const int64_t *max_gpus_per_user, *max_jobs_per_user, *grp_gpus;
    int64_t *group_gpus, *group_jobs, *qos_gpus; /* running now */
    int8_t *held_reason; /* out per job: the last limit that held it (GP_QOS_*), or GP_OK */
};

/* Why a job may not start now whatever the free nodes (Slurm's pending reasons), or 0. A job held
 * by a limit is skipped by the schedulers: it blocks no one (slurmctld's job_scheduler does so). */
enum { GP_OK, GP_QOS_MAX_GPUS_PER_USER, GP_QOS_MAX_JOBS_PER_USER, GP_QOS_GRP_GPUS };
static inline int gp_limit_reason(const Sim *sim, int32_t job) {
    const struct GpQos *q = sim->qos;
    if (!q) return GP_OK;
    int32_t group = q->limit_group[job], qos = q->group_qos[group];
    int64_t gpus = sim->gpus[job];
    int reason = GP_OK;
    if (q->max_gpus_per_user[qos] >= 0 && q->group_gpus[group] + gpus > q->max_gpus_per_user[qos])
        reason = GP_QOS_MAX_GPUS_PER_USER;
    else if (q->max_jobs_per_user[qos] >= 0 && q->group_jobs[group] + 1 > q->max_jobs_per_user[qos])
        reason = GP_QOS_MAX_JOBS_PER_USER;
    else if (q->grp_gpus[qos] >= 0 && q->qos_gpus[qos] + gpus > q->grp_gpus[qos])
        reason = GP_QOS_GRP_GPUS;
    if (reason) q->held_reason[job] = (int8_t)reason; /* the last limit that held it, for jobs.parquet */
    return reason;
}

#endif
