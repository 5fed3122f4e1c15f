/*
 * Fair Tree (https://slurm.schedmd.com/fair_tree.html, fair_tree.c), computed in the engine at each
 * PriorityCalcPeriod: the same factors as sim/slurm/fairshare.py's FairTree, which documents the
 * rules (two levels: accounts under root beside root's own user association, users under their
 * account), to the last bit. For that the sums are NumPy's (pairwise, as np.sum adds a contiguous
 * array), the clock's periods Python's (float floor division; datetime.fromtimestamp's rounding to
 * microseconds), and the orders np.unique's and np.lexsort's (stable). fairshare.py stays the
 * reference the tests compare with (tests/slurm/test_fair_tree_in_c.py) and computes classic fair
 * share, whose 2**x is NumPy's own (it differs from the C library's in the last bit).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fairshare.h"

/* the root user association's Fairshare (fairshare.py ROOT_USER_SHARES) */
#define ROOT_USER_SHARES 1.0
/* the Unix epoch (a Thursday) to its first Sunday, for PriorityUsageResetPeriod=WEEKLY */
#define SUNDAY_S (3 * 86400.0)

typedef struct UserKey {
    int32_t group;
    double neg_lf;
    int32_t user;
} UserKey;

/* np.lexsort((-user_lf, group)): by group, then -LF, then position (the sort is stable) */
static int user_key_cmp(const void *pa, const void *pb) {
    const UserKey *a = pa, *b = pb;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    if (a->neg_lf != b->neg_lf) return a->neg_lf < b->neg_lf ? -1 : 1;
    return (a->user > b->user) - (a->user < b->user);
}

typedef struct {
    double neg_lf;
    int32_t account;
} AccountKey;

static int account_key_cmp(const void *pa, const void *pb) {
    const AccountKey *a = pa, *b = pb;
    if (a->neg_lf != b->neg_lf) return a->neg_lf < b->neg_lf ? -1 : 1;
    return (a->account > b->account) - (a->account < b->account);
}

struct GpFairTree {
    int32_t n_users, n_accounts;
    const int32_t *account_of_user;
    const double *shares;
    double half_life_s, epoch_s, last_s;
    int reset_period, called;
    double *usage;                  /* per user association: decayed billing-seconds */
    double *top_shares, *top_usage; /* per account, and root's user association last */
    double *account_lf;
    int32_t *siblings, *account_group; /* per account */
    AccountKey *by_lf;
    UserKey *keys; /* per user association */
    int64_t *first_of_tie;
};

/* np.sum of a contiguous float64 array: numpy's pairwise summation (loops_utils.h.src), blocks
 * of at most 128 summed with 8 accumulators. */
static double pairwise_sum(const double *a, int64_t n) {
    if (n < 8) {
        double sum = 0.;
        for (int64_t i = 0; i < n; i++) sum += a[i];
        return sum;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        int64_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) sum += a[i];
        return sum;
    }
    int64_t half = n / 2;
    half -= half % 8;
    return pairwise_sum(a, half) + pairwise_sum(a + half, n - half);
}

/* Python's float floor division a // b (floatobject.c:_float_div_mod). */
static double python_floor_div(double a, double b) {
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod && ((b < 0) != (mod < 0))) div -= 1.0;
    if (!div) return copysign(0.0, a / b);
    double floored = floor(div);
    return div - floored > 0.5 ? floored + 1.0 : floored;
}

/* fairshare.py usage_period: which period the Unix time `unix_s` falls in. */
static int64_t usage_period(int period, double unix_s) {
    if (period == GP_RESET_DAILY) return (int64_t)python_floor_div(unix_s, 86400.0);
    if (period == GP_RESET_WEEKLY) return (int64_t)python_floor_div(unix_s - SUNDAY_S, 7 * 86400.0);
    if (period == GP_RESET_NONE) return 0;
    /* datetime.fromtimestamp(unix_s, tz=UTC): whole seconds after rounding to microseconds, half to even */
    double seconds, micro = modf(unix_s, &seconds) * 1e6;
    micro = nearbyint(micro);
    if (micro >= 1e6)
        seconds += 1.0;
    else if (micro < 0)
        seconds -= 1.0;
    time_t when = (time_t)seconds;
    struct tm utc;
    if (!gmtime_r(&when, &utc)) return 0;
    int64_t year = utc.tm_year + 1900, month = utc.tm_mon + 1;
    if (period == GP_RESET_MONTHLY) return year * 12 + month - 1;
    if (period == GP_RESET_QUARTERLY) return year * 4 + (month - 1) / 3;
    return year;
}

void gp_fair_tree_free(GpFairTree *tree) {
    if (!tree) return;
    PyMem_RawFree(tree->usage);
    PyMem_RawFree(tree->top_shares);
    PyMem_RawFree(tree->top_usage);
    PyMem_RawFree(tree->account_lf);
    PyMem_RawFree(tree->siblings);
    PyMem_RawFree(tree->account_group);
    PyMem_RawFree(tree->by_lf);
    PyMem_RawFree(tree->keys);
    PyMem_RawFree(tree->first_of_tie);
    PyMem_RawFree(tree);
}

GpFairTree *gp_fair_tree_new(int32_t n_users, const int32_t *account_of_user, int32_t n_accounts,
                             const double *shares, double half_life_s, int reset_period, double epoch_s) {
    GpFairTree *tree = PyMem_RawCalloc(1, sizeof(GpFairTree));
    if (!tree) return NULL;
    size_t users = (size_t)n_users + 1, accounts = (size_t)n_accounts + 1;
    *tree = (GpFairTree){n_users, n_accounts, account_of_user, shares, half_life_s, epoch_s, 0.0, reset_period, 0};
    tree->usage = PyMem_RawCalloc(users, sizeof(double));
    tree->top_shares = PyMem_RawCalloc(accounts, sizeof(double));
    tree->top_usage = PyMem_RawCalloc(accounts, sizeof(double));
    tree->account_lf = PyMem_RawCalloc(accounts, sizeof(double));
    tree->siblings = PyMem_RawCalloc(accounts, sizeof(int32_t));
    tree->account_group = PyMem_RawCalloc(accounts, sizeof(int32_t));
    tree->by_lf = PyMem_RawCalloc(accounts, sizeof(AccountKey));
    tree->keys = PyMem_RawCalloc(users, sizeof(UserKey));
    tree->first_of_tie = PyMem_RawCalloc(users, sizeof(int64_t));
    if (!tree->usage || !tree->top_shares || !tree->top_usage || !tree->account_lf || !tree->siblings ||
        !tree->account_group || !tree->by_lf || !tree->keys || !tree->first_of_tie) {
        gp_fair_tree_free(tree);
        return NULL;
    }
    for (int32_t u = 0; u < n_users; u++) tree->siblings[account_of_user[u]]++;
    memcpy(tree->top_shares, shares, (size_t)n_accounts * sizeof(double));
    tree->top_shares[n_accounts] = ROOT_USER_SHARES;
    return tree;
}

/* FairShare.__call__: decay since the last call, the reset when a period boundary passed, the
 * usage since; then FairTree.factors. */
void gp_fair_tree_factors(GpFairTree *tree, double now, const double *accrued, double *factors) {
    int32_t n = tree->n_users, accounts = tree->n_accounts;
    const int32_t *account = tree->account_of_user;
    double *usage = tree->usage;
    if (tree->called && tree->half_life_s > 0) {
        double decay = pow(2.0, -(now - tree->last_s) / tree->half_life_s);
        for (int32_t u = 0; u < n; u++) usage[u] *= decay;
    }
    if (tree->called && tree->reset_period != GP_RESET_NONE &&
        usage_period(tree->reset_period, tree->epoch_s + tree->last_s) !=
            usage_period(tree->reset_period, tree->epoch_s + now))
        memset(usage, 0, (size_t)n * sizeof(double));
    tree->called = 1;
    tree->last_s = now;
    for (int32_t u = 0; u < n; u++) usage[u] += accrued[u];

    /* each account's LF among its siblings (root's user association, with no usage, the last) */
    double *top_usage = tree->top_usage;
    memset(top_usage, 0, ((size_t)accounts + 1) * sizeof(double));
    for (int32_t u = 0; u < n; u++) top_usage[account[u]] += usage[u]; /* np.bincount's order */
    double shares_total = pairwise_sum(tree->top_shares, accounts + 1);
    double usage_total = pairwise_sum(top_usage, accounts + 1);
    for (int32_t a = 0; a < accounts; a++) {
        double s = tree->top_shares[a] / shares_total, used = usage_total > 0 ? top_usage[a] / usage_total : 0.0;
        tree->account_lf[a] = used > 0 ? s / used : INFINITY;
    }
    /* groups: accounts of equal LF, highest LF first (np.unique of -LF) */
    AccountKey *by_lf = tree->by_lf;
    for (int32_t a = 0; a < accounts; a++) by_lf[a] = (AccountKey){-tree->account_lf[a], a};
    qsort(by_lf, (size_t)accounts, sizeof(AccountKey), account_key_cmp);
    for (int32_t k = 0, group = 0; k < accounts; k++) {
        if (k > 0 && by_lf[k].neg_lf != by_lf[k - 1].neg_lf) group++;
        tree->account_group[by_lf[k].account] = group;
    }
    /* each user's LF among its account's users (Fairshare=1 each), then the ranking order */
    UserKey *keys = tree->keys;
    for (int32_t u = 0; u < n; u++) {
        double parent = top_usage[account[u]];
        double used = parent > 0 ? usage[u] / parent : 0.0;
        double lf = used > 0 ? (1.0 / tree->siblings[account[u]]) / used : INFINITY;
        keys[u] = (UserKey){tree->account_group[account[u]], -lf, u};
    }
    qsort(keys, (size_t)n, sizeof(UserKey), user_key_cmp);
    /* rank = position of the first of a run of equal (group, LF); the first run ties with root's
     * user association when its account's LF is infinite */
    int64_t *first = tree->first_of_tie;
    int64_t last_new = 0, first_new_after_0 = n;
    for (int32_t k = 0; k < n; k++) {
        int new_rank = k == 0 || keys[k].group != keys[k - 1].group || keys[k].neg_lf != keys[k - 1].neg_lf;
        if (new_rank) last_new = k + 1;
        if (new_rank && k > 0 && first_new_after_0 == n) first_new_after_0 = k;
        first[k] = last_new;
    }
    if (n > 0 && tree->account_lf[account[keys[0].user]] == INFINITY)
        for (int64_t k = 0; k < first_new_after_0; k++) first[k] = 0;
    for (int32_t k = 0; k < n; k++) factors[keys[k].user] = (double)(n + 1 - first[k]) / (double)(n + 1);
}
