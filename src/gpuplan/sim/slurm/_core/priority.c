/*
 * The queue's priority order: Slurm's PriorityType=priority/multifactor (and priority/basic when
 * partitions of different PriorityTier share nodes: the tier is then the only factor).
 *
 *   priority = static part (job size, partition, QoS factors times their PriorityWeight*)
 *            + PriorityWeightAge * min(age / PriorityMaxAge, 1)
 *            + PriorityWeightFairshare * fair-share factor of the job's account
 *
 * truncated to a whole number (priority_multifactor.c:_get_priority_internal).
 *
 * Age counts from a job's eligibility (accrue_time = begin_time), but only once a scheduling pass
 * has read the job in the queue: job_scheduler.c:build_job_queue, in every main pass and backfill
 * cycle, calls acct_policy.c:acct_policy_handle_accrue_time; until then accrue_time is 0 and
 * set_priority_factors gives no age.
 *
 * Every PriorityCalcPeriod from the decay thread's start (its ticks) the engine hands each
 * account's usage since the last tick to the fair-share hook (Python: decay and the fair-share
 * formula live there), recomputes the priority of every queued job and sorts the queue: priority
 * high to low, then submit time, then job id. Usage is billing TRES-seconds over whole seconds:
 * _apply_new_usage charges calc_job_billable_tres (the job's CPUs without TRESBillingWeights) from
 * max(its start, the last tick) to the tick, or to its end, all time(NULL) stamps. Without
 * AccountingStorageEnforce=limits a job that ends between ticks loses its use since the last tick
 * (the tick skips finished jobs and nothing adds it at the end).
 *
 * A requeued job gets a new SubmitTime, the time it was requeued, and its age restarts when a pass
 * reads it eligible again (job_mgr.c:_job_requeue_op sets submit_time = now and accrue_time = 0),
 * so it sorts behind older jobs of equal priority; but it keeps the priority it last had while
 * pending until the next tick (nothing in the requeue calls set_job_prio). At that tick it is
 * pending, whether or not its requeue delay (its BeginTime) is over, so its priority is computed
 * again (priority_multifactor.c:decay_apply_weighted_factors skips only held and not pending jobs),
 * with no age (accrue_time 0) and the fair share of the tick. A job that arrives in between gets
 * its priority at once, from the last tick's fair-share factors, and is inserted in order, as
 * slurmctld does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare.h"
#include "plugins.h"
#include "preempt.h"

struct GpPriority {
    const double *prio_static; /* per job: weighted job-size, partition and QoS factors */
    const int32_t *account;    /* per job: index of its account (association) */
    int32_t n_accounts;
    double weight_age, max_age, weight_fairshare, calc_period;
    double *priority;          /* per job: its priority when it was last computed */
    double *submit_s;          /* per job: its SubmitTime (sbatch's; a requeue resets it), for ties */
    double *eligible_s;        /* per job: when its age began (accrue_time: eligible, again after a requeue) */
    uint8_t *keeps_priority;   /* per job: requeued since the last tick, it keeps its last priority */
    int32_t *requeued;         /* those jobs (each once), n_requeued of them: queued or waiting out the delay */
    int32_t n_requeued;
    uint8_t *accrued;          /* per job: a pass read it queued (accrue_time set): its age counts */
    int32_t *unaccrued;        /* the queued jobs not accrued yet (each once), n_unaccrued of them */
    int32_t n_unaccrued;
    double *fs_factor;         /* per account: fair-share factor from the last recalculation */
    double *acct_usage;          /* per account: billing-seconds used since the last recalculation */
    const double *usage_billing; /* per job: its billing TRES x UsageFactor */
    double next_recalc, last_recalc;
    double calc_phase; /* recalculations at calc_phase + k x calc_period (slurmctld's start) */
    /* AccountingStorageEnforce without "limits": a job's use between the last recalculation and its
     * end is never counted (acct_policy.c returns before priority_p_job_end) */
    int tick_usage_only;
    /* fair-share hook(now, usage_bytes) -> float64 buffer of factors, called with the GIL; or None */
    PyObject *fairshare;
    GpFairTree *fair_tree; /* or Fair Tree computed here (fairshare.c), with no call into Python */
};

/* Called with the GIL held: hand each account's usage since the last call, take factors. */
static int call_fairshare_hook(struct GpPriority *p, double now) {
    PyObject *usage = PyBytes_FromStringAndSize((const char *)p->acct_usage,
                                                (Py_ssize_t)p->n_accounts * (Py_ssize_t)sizeof(double));
    if (!usage) return -1;
    PyObject *result = PyObject_CallFunction(p->fairshare, "dN", now, usage);
    if (!result) return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(result, &view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(result);
        return -1;
    }
    int ok = view.len == (Py_ssize_t)p->n_accounts * (Py_ssize_t)sizeof(double);
    if (ok)
        memcpy(p->fs_factor, view.buf, (size_t)view.len);
    else
        PyErr_SetString(PyExc_ValueError, "fair-share hook: expected one float64 per account");
    PyBuffer_Release(&view);
    Py_DECREF(result);
    return ok ? 0 : -1;
}

static double job_priority(const struct GpPriority *p, int32_t job, double now) {
    double age = !p->accrued[job] ? 0.0 : p->max_age > 0 ? (now - p->eligible_s[job]) / p->max_age : 1.0;
    if (age > 1) age = 1;
    return floor(p->prio_static[job] + p->weight_age * age + p->weight_fairshare * p->fs_factor[p->account[job]]);
}

/* A queued job with its sort keys beside it, so a sort reads memory in sequence. */
typedef struct {
    double priority, submit;
    int64_t job_id;
    int32_t job, nodes;
    double estimate;
} Entry;

/* Queue order (job_scheduler.c:sort_job_queue2): with preemption on, a job that may preempt the
 * other first; then higher priority, earlier submit, lower job id (then index). */
static inline int entry_before(const Sim *sim, const Entry *a, const Entry *b) {
    if (sim->preempt) {
        if (gp_may_preempt(sim, a->job, b->job)) return 1;
        if (gp_may_preempt(sim, b->job, a->job)) return 0;
    }
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->submit != b->submit) return a->submit < b->submit;
    if (a->job_id != b->job_id) return a->job_id < b->job_id;
    return a->job < b->job;
}

static inline Entry entry_of(const Sim *sim, const struct GpPriority *p, int32_t job) {
    return (Entry){p->priority[job], p->submit_s[job], sim->job_id[job], job, 0, 0.0};
}

/* The same order on two jobs. */
static int before(const Sim *sim, const struct GpPriority *p, int32_t a, int32_t b) {
    Entry ea = entry_of(sim, p, a), eb = entry_of(sim, p, b);
    return entry_before(sim, &ea, &eb);
}

/* Sort `entries` by `before`, stably (a merge sort, as Slurm's list_sort: the preemption test makes
 * the order a partial one, so the sort is named rather than left to qsort). */
static void sort_entries(const Sim *sim, Entry *entries, Entry *scratch, int32_t count) {
    for (int32_t width = 1; width < count; width *= 2) {
        for (int32_t lo = 0; lo < count; lo += 2 * width) {
            int32_t mid = lo + width < count ? lo + width : count;
            int32_t hi = lo + 2 * width < count ? lo + 2 * width : count;
            int32_t i = lo, j = mid, out = lo;
            while (i < mid && j < hi)
                scratch[out++] = entry_before(sim, &entries[j], &entries[i]) ? entries[j++] : entries[i++];
            while (i < mid) scratch[out++] = entries[i++];
            while (j < hi) scratch[out++] = entries[j++];
        }
        memcpy(entries, scratch, (size_t)count * sizeof(Entry));
    }
}

/* Recompute every queued job's priority and sort the queue (closing holes). */
static int resort(Sim *sim, struct GpPriority *p, double now) {
    int32_t count = 0;
    Entry *entries = PyMem_RawMalloc(2 * (size_t)(sim->q_len ? sim->q_len : 1) * sizeof(Entry));
    if (!entries) return -1;
    for (int32_t s = sim->q_first; s < sim->q_count; s++) {
        if (sim->q_nodes[s] == GP_GONE) continue;
        int32_t job = sim->q_job[s];
        p->priority[job] = job_priority(p, job, now);
        p->keeps_priority[job] = 0;
        entries[count] = entry_of(sim, p, job);
        entries[count].nodes = sim->q_nodes[s];
        entries[count++].estimate = sim->q_estimate[s];
    }
    sort_entries(sim, entries, entries + (sim->q_len ? sim->q_len : 1), count);
    /* the queue's order changed (not only its holes closed): a backfill cycle may decide anew */
    for (int32_t s = sim->q_first, k = 0; s < sim->q_count; s++)
        if (sim->q_nodes[s] != GP_GONE && sim->q_job[s] != entries[k++].job) {
            sim->state_version++;
            break;
        }
    for (int32_t k = 0; k < count; k++) {
        sim->q_job[k] = entries[k].job;
        sim->q_nodes[k] = entries[k].nodes;
        sim->q_estimate[k] = entries[k].estimate;
    }
    PyMem_RawFree(entries);
    sim->q_first = 0;
    sim->q_count = count;
    sim->q_holes = 0;
    return 0;
}

/*
 * Where `job` (queued last, at `slot`) goes: after the last queued job it does not come before. The
 * queued jobs are in order (a total one without preemption), so it is found by halving: a deep
 * queue costs O(log queue) per arrival, not a step per job it passes. Holes (started jobs) are
 * passed over.
 */
static int32_t insertion_slot(const Sim *sim, const struct GpPriority *p, int32_t job, int32_t slot) {
    int32_t lo = sim->q_first, hi = slot; /* the answer is in [lo, hi]; it comes before every job in [hi, slot) */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2, t = mid;
        while (t < hi && sim->q_nodes[t] == GP_GONE) t++;
        if (t == hi || before(sim, p, job, sim->q_job[t]))
            hi = mid;
        else
            lo = t + 1;
    }
    return lo;
}

/* A job entering the queue gets its priority from the last recalculation's factors (a requeued one
 * keeps its last, until the next tick) and its place. */
static void priority_queued(Sim *sim, void *state, int32_t slot) {
    struct GpPriority *p = state;
    int32_t job = sim->q_job[slot];
    int32_t nodes = sim->q_nodes[slot];
    double estimate = sim->q_estimate[slot];
    if (!p->keeps_priority[job]) p->priority[job] = job_priority(p, job, sim->now);
    /* a job is queued again only after it ran, when a pass had read it: it is listed once */
    if (!p->accrued[job] && p->n_unaccrued < sim->n_jobs) p->unaccrued[p->n_unaccrued++] = job;
    /* move it up past queued jobs it comes before (holes are moved along; order is kept) */
    int32_t s = slot;
    if (!sim->preempt)
        s = insertion_slot(sim, p, job, slot);
    else /* with preemption the order is partial: step by step, as list_sort */
        while (s > sim->q_first && (sim->q_nodes[s - 1] == GP_GONE || before(sim, p, job, sim->q_job[s - 1]))) s--;
    memmove(sim->q_job + s + 1, sim->q_job + s, (size_t)(slot - s) * sizeof(int32_t));
    memmove(sim->q_nodes + s + 1, sim->q_nodes + s, (size_t)(slot - s) * sizeof(int32_t));
    memmove(sim->q_estimate + s + 1, sim->q_estimate + s, (size_t)(slot - s) * sizeof(double));
    sim->q_job[s] = job;
    sim->q_nodes[s] = nodes;
    sim->q_estimate[s] = estimate;
}

static void priority_requeued(Sim *sim, void *state, int32_t job, double now, double at) {
    struct GpPriority *p = state;
    /* "make sure the submit isn't the same as the last submit" (_job_requeue_op): now + 1 if so;
     * in whole seconds, as time(NULL) gives them (batch_requeue_fini) */
    double second = floor(now);
    p->submit_s[job] = second == p->submit_s[job] ? second + 1 : second;
    p->eligible_s[job] = floor(at);
    if (!p->keeps_priority[job] && p->n_requeued < sim->n_jobs) p->requeued[p->n_requeued++] = job;
    p->keeps_priority[job] = 1;
    p->accrued[job] = 0; /* _job_requeue_op: accrue_time = 0 */
}

/* A pass reads the queue: every queued job accrues age from its eligibility from now on. */
static void priority_queue_read(Sim *sim, void *state, double now) {
    (void)sim;
    (void)now;
    struct GpPriority *p = state;
    for (int32_t k = 0; k < p->n_unaccrued; k++) p->accrued[p->unaccrued[k]] = 1;
    p->n_unaccrued = 0;
}

/* A running job's use from max(its start, the last tick) to `now`, in whole seconds
 * (priority_multifactor.c:_apply_new_usage: time(NULL) stamps), to its account. */
static void charge_usage(const Sim *sim, struct GpPriority *p, int32_t job, double now) {
    double began = floor(sim->attempt_start ? sim->attempt_start[job] : sim->start[job]);
    double last = floor(p->last_recalc);
    double seconds = floor(now) - (began > last ? began : last);
    if (seconds > 0) p->acct_usage[p->account[job]] += p->usage_billing[job] * seconds;
}

/* With AccountingStorageEnforce=limits a job's end charges its use since the last tick
 * (priority_p_job_end); without, that use is lost. */
static void priority_ended(Sim *sim, void *state, int32_t job) {
    struct GpPriority *p = state;
    if (!p->tick_usage_only) charge_usage(sim, p, job, sim->now);
}

/* The recalculation when due: the running jobs' use up to the tick, then new factors and order. */
static int priority_instant(Sim *sim, void *state, double now) {
    struct GpPriority *p = state;
    if (now >= p->next_recalc) {
        for (int32_t k = 0; k < sim->est_len; k++) charge_usage(sim, p, sim->est_heap[k], now);
        if (p->fair_tree) {
            gp_fair_tree_factors(p->fair_tree, now, p->acct_usage, p->fs_factor);
        } else if (p->fairshare != Py_None) {
            PyGILState_STATE gil = PyGILState_Ensure();
            int failed = call_fairshare_hook(p, now);
            PyGILState_Release(gil);
            if (failed) {
                sim->hook_error = 1;
                return -1;
            }
        }
        memset(p->acct_usage, 0, (size_t)p->n_accounts * sizeof(double));
        if (resort(sim, p, now) < 0) {
            sim->out_of_memory = 1;
            return -1;
        }
        /* requeued jobs still waiting out their requeue delay are pending too (the queued ones
         * were recomputed above) */
        for (int32_t k = 0; k < p->n_requeued; k++) {
            int32_t job = p->requeued[k];
            if (!p->keeps_priority[job]) continue;
            p->priority[job] = job_priority(p, job, now);
            p->keeps_priority[job] = 0;
        }
        p->n_requeued = 0;
        double period = p->calc_period > 0 ? p->calc_period : 300;
        double phase = p->calc_phase;
        p->last_recalc = now;
        p->next_recalc = phase + (floor((now - phase) / period) + 1) * period;
    }
    return 0;
}

/* the next recalculation is an instant while jobs wait or run */
static void priority_after_pass(Sim *sim, void *state, double now) {
    (void)now;
    struct GpPriority *p = state;
    if (sim->q_len > 0 || sim->end_len > 0) gp_wake_at(sim, p->next_recalc);
}

static void priority_free(void *state) {
    struct GpPriority *p = state;
    if (!p) return;
    PyMem_RawFree(p->priority);
    PyMem_RawFree(p->submit_s);
    PyMem_RawFree(p->eligible_s);
    PyMem_RawFree(p->fs_factor);
    PyMem_RawFree(p->acct_usage);
    PyMem_RawFree(p->keeps_priority);
    PyMem_RawFree(p->requeued);
    PyMem_RawFree(p->accrued);
    PyMem_RawFree(p->unaccrued);
    gp_fair_tree_free(p->fair_tree);
    PyMem_RawFree(p);
}

static const GpHooks PRIORITY_HOOKS = {
    .instant = priority_instant,
    .after_pass = priority_after_pass,
    .queue_read = priority_queue_read,
    .job_queued = priority_queued,
    .job_ended = priority_ended,
    .job_requeued = priority_requeued,
    .free = priority_free,
};

/* Settings (priority.py PriorityInputs.for_engine): static, usage_billing, submitted_s (float64) and association
 * (int32) per job; accounts; weight_age, max_age_s, weight_fairshare, calc_period_s, calc_phase_s;
 * tick_usage_only; fairshare (the hook, or None); or, for Fair Tree computed here, fair_tree_accounts
 * (int32 per user association: its account), fair_tree_shares (float64 per account),
 * decay_half_life_s, usage_reset_period (GP_RESET_*) and epoch_s. */
static int multifactor_setup(Sim *sim, GpSettings *s) {
    struct GpPriority p = {0};
    void *prio_static, *account, *usage, *submitted;
    int64_t accounts;
    if (gp_read_array(s, "static", 8, s->n_jobs, 0, 0, &prio_static, NULL) < 0 ||
        gp_read_array(s, "association", 4, s->n_jobs, 0, 0, &account, NULL) < 0 ||
        gp_read_array(s, "usage_billing", 8, s->n_jobs, 0, 0, &usage, NULL) < 0 ||
        gp_read_array(s, "submitted_s", 8, s->n_jobs, 0, 0, &submitted, NULL) < 0 ||
        gp_read_int(s, "accounts", &accounts) < 0 || gp_read_double(s, "weight_age", &p.weight_age) < 0 ||
        gp_read_double(s, "max_age_s", &p.max_age) < 0 ||
        gp_read_double(s, "weight_fairshare", &p.weight_fairshare) < 0 ||
        gp_read_double(s, "calc_period_s", &p.calc_period) < 0 ||
        gp_read_double(s, "calc_phase_s", &p.calc_phase) < 0 ||
        gp_read_bool(s, "tick_usage_only", &p.tick_usage_only) < 0 ||
        gp_read_object(s, "fairshare", 0, &p.fairshare) < 0)
        return -1;
    void *tree_accounts = NULL, *tree_shares = NULL;
    Py_ssize_t n_tree_accounts = 0;
    double half_life = 0, epoch = 0;
    int64_t reset = GP_RESET_NONE;
    if (gp_read_array(s, "fair_tree_accounts", 4, accounts, 0, 1, &tree_accounts, NULL) < 0) return -1;
    if (tree_accounts &&
        (gp_read_array(s, "fair_tree_shares", 8, -1, 0, 0, &tree_shares, &n_tree_accounts) < 0 ||
         gp_read_double(s, "decay_half_life_s", &half_life) < 0 || gp_read_int(s, "usage_reset_period", &reset) < 0 ||
         gp_read_double(s, "epoch_s", &epoch) < 0))
        return -1;
    if (tree_accounts && (n_tree_accounts < 1 || n_tree_accounts > INT32_MAX || reset < GP_RESET_NONE ||
                          reset > GP_RESET_YEARLY ||
                          gp_check_indices(tree_accounts, accounts, n_tree_accounts,
                                           "priority: user association %zd has no account") < 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "priority: fair_tree_shares or usage_reset_period");
        return -1;
    }
    if (accounts < 1 || accounts > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "priority: at least one account");
        return -1;
    }
    if (gp_check_indices(account, s->n_jobs, (Py_ssize_t)accounts, "priority: job index %zd has no account") < 0)
        return -1;
    p.prio_static = prio_static;
    p.account = account;
    p.usage_billing = usage;
    p.n_accounts = (int32_t)accounts;
    p.next_recalc = -INFINITY;
    p.last_recalc = -INFINITY;
    size_t n = (size_t)(s->n_jobs ? s->n_jobs : 1), a = (size_t)p.n_accounts;
    struct GpPriority *state = PyMem_RawMalloc(sizeof(struct GpPriority));
    if (state) {
        *state = p;
        state->priority = PyMem_RawCalloc(n, sizeof(double));
        state->submit_s = PyMem_RawMalloc(n * sizeof(double));
        state->eligible_s = PyMem_RawMalloc(n * sizeof(double));
        state->fs_factor = PyMem_RawCalloc(a, sizeof(double));
        state->acct_usage = PyMem_RawCalloc(a, sizeof(double));
        state->keeps_priority = PyMem_RawCalloc(n, sizeof(uint8_t));
        state->requeued = PyMem_RawMalloc(n * sizeof(int32_t));
        state->accrued = PyMem_RawCalloc(n, sizeof(uint8_t));
        state->unaccrued = PyMem_RawMalloc(n * sizeof(int32_t));
        state->fair_tree = tree_accounts ? gp_fair_tree_new((int32_t)a, tree_accounts, (int32_t)n_tree_accounts,
                                                            tree_shares, half_life, (int)reset, epoch)
                                         : NULL;
    }
    if (!state || !state->priority || !state->submit_s || !state->eligible_s || !state->fs_factor ||
        !state->acct_usage || !state->keeps_priority || !state->requeued || !state->accrued || !state->unaccrued ||
        (tree_accounts && !state->fair_tree) ||
        gp_add_piece(sim, s->piece, &PRIORITY_HOOKS, state) < 0) {
        priority_free(state);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < a; k++) state->fs_factor[k] = 1.0; /* no usage yet */
    memcpy(state->submit_s, submitted, (size_t)s->n_jobs * sizeof(double));
    memcpy(state->eligible_s, sim->submit, (size_t)s->n_jobs * sizeof(double));
    return 0;
}

const GpPlugin GP_PRIORITY_PLUGINS[] = {
    {"priority/multifactor", "age, fair share, job size, partition and QoS factors, recalculated every "
                             "PriorityCalcPeriod", multifactor_setup},
    {"priority/basic", "submit order within each PriorityTier (the tier is the only factor)", multifactor_setup},
    {NULL, NULL, NULL},
};
