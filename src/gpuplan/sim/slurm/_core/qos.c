/*
 * Slurm QoS resource limits (https://slurm.schedmd.com/resource_limits.html): the usage counters of
 * the running jobs per (QoS, user) group and per QoS, kept as jobs start and end; the test is
 * gp_limit_reason (qos.h), which the passes call for each job they consider.
 */
#include <string.h>

#include "plugins.h"
#include "qos.h"

static void count(Sim *sim, struct GpQos *q, int32_t job, int sign) {
    int32_t group = q->limit_group[job];
    q->group_gpus[group] += sign * sim->gpus[job];
    q->group_jobs[group] += sign;
    q->qos_gpus[q->group_qos[group]] += sign * sim->gpus[job];
}

static void qos_started(Sim *sim, void *state, int32_t job, double now) {
    (void)now;
    count(sim, state, job, +1);
}

static void qos_ended(Sim *sim, void *state, int32_t job) { count(sim, state, job, -1); }

static void qos_free(void *state) {
    struct GpQos *q = state;
    if (!q) return;
    PyMem_RawFree(q->group_gpus);
    PyMem_RawFree(q);
}

static const GpHooks QOS_HOOKS = {.job_started = qos_started, .job_ended = qos_ended, .free = qos_free};

/* Settings (qos.py LimitInputs.for_engine): group (int32) per job, group_qos (int32) per group,
 * max_gpus_per_user, max_jobs_per_user, grp_gpus (int64) per QoS, held_reason (int8, out) per job. */
static int qos_setup(Sim *sim, GpSettings *s) {
    void *group, *group_qos, *max_gpus, *max_jobs, *grp, *held;
    Py_ssize_t groups, qos;
    if (gp_read_array(s, "group", 4, s->n_jobs, 0, 0, &group, NULL) < 0 ||
        gp_read_array(s, "group_qos", 4, -1, 0, 0, &group_qos, &groups) < 0 ||
        gp_read_array(s, "max_gpus_per_user", 8, -1, 0, 0, &max_gpus, &qos) < 0 ||
        gp_read_array(s, "max_jobs_per_user", 8, qos, 0, 0, &max_jobs, NULL) < 0 ||
        gp_read_array(s, "grp_gpus", 8, qos, 0, 0, &grp, NULL) < 0 ||
        gp_read_array(s, "held_reason", 1, s->n_jobs, 1, 0, &held, NULL) < 0)
        return -1;
    if (qos < 1) {
        PyErr_SetString(PyExc_ValueError, "qos: at least one QoS");
        return -1;
    }
    if (gp_check_indices(group, s->n_jobs, groups, "limits: job index %zd has no group") < 0 ||
        gp_check_indices(group_qos, groups, qos, "limits: group %zd has no QoS") < 0)
        return -1;
    struct GpQos *q = PyMem_RawCalloc(1, sizeof(struct GpQos));
    int64_t *running = q ? PyMem_RawCalloc((size_t)(2 * groups + qos), sizeof(int64_t)) : NULL;
    if (q) q->group_gpus = running;
    if (!q || !running || gp_add_piece(sim, s->piece, &QOS_HOOKS, q) < 0) {
        qos_free(q);
        PyErr_NoMemory();
        return -1;
    }
    q->limit_group = group;
    q->group_qos = group_qos;
    q->max_gpus_per_user = max_gpus;
    q->max_jobs_per_user = max_jobs;
    q->grp_gpus = grp;
    q->group_jobs = running + groups;
    q->qos_gpus = running + 2 * groups;
    q->held_reason = held;
    memset(q->held_reason, 0, (size_t)s->n_jobs);
    sim->qos = q;
    return 0;
}

const GpPlugin GP_QOS_PLUGINS[] = {
    {"qos", "QoS limits: MaxTRESPerUser=gres/gpu, MaxJobsPerUser, GrpTRES=gres/gpu", qos_setup},
    {NULL, NULL, NULL},
};
