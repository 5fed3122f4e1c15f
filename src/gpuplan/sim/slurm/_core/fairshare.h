/* Fair Tree's fair-share factors in the engine (fairshare.c): what sim/slurm/fairshare.py's FairTree
 * computes, without a call into Python at each PriorityCalcPeriod. */
#ifndef GPUPLAN_FAIRSHARE_H
#define GPUPLAN_FAIRSHARE_H

#include <stdint.h>

/* PriorityUsageResetPeriod, in fairshare.py's RESET_PERIODS order */
enum { GP_RESET_NONE, GP_RESET_DAILY, GP_RESET_WEEKLY, GP_RESET_MONTHLY, GP_RESET_QUARTERLY, GP_RESET_YEARLY };

typedef struct GpFairTree GpFairTree;

/* `n_users` user associations, each under account_of_user[k] of `n_accounts` accounts of
 * `shares` (Fairshare=); usage decays with PriorityDecayHalfLife `half_life_s` and goes back to 0
 * at each `reset_period` boundary of the Unix clock (`epoch_s`: the Unix time of t = 0). NULL when
 * memory runs out. The arrays are read, not copied: they must outlive it. */
GpFairTree *gp_fair_tree_new(int32_t n_users, const int32_t *account_of_user, int32_t n_accounts,
                             const double *shares, double half_life_s, int reset_period, double epoch_s);
/* A recalculation at `now`: each user association's usage since the last one (`accrued`) joins its
 * decayed usage; `factors` gets each one's fair-share factor. */
void gp_fair_tree_factors(GpFairTree *tree, double now, const double *accrued, double *factors);
void gp_fair_tree_free(GpFairTree *tree);

#endif
