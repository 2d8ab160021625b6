/* Licensed under the Apache License, Version 2.0. */

/*
 * sim-scenarios: random scenarios (qc_scenario.h) on the simulated
 * world (sim_world.h), each under plain Apache, the lowest tree pinned
 * and mod_qosctl, held to the controller's invariants:
 *
 *   goodput   at least SIM_GOOD_MIN of the better fixed policy's;
 *   refusals  at most SIM_REFUSE_MAX of the requests wherever the
 *             lowest tree pinned answers every request in time;
 *   guarantee a host within its contract gets SIM_FULL_MIN of its
 *             requests at full quality;
 *   premium   premium clients get SIM_ALONE_MIN of the goodput they get
 *             without their host's basic clients ("alone": every other
 *             host's clients still there), and full quality wherever
 *             they fit (premium_fits);
 *   mixing    at most SIM_MIXED_MAX of the pages mix trees;
 *   errors    no more client errors than the better fixed policy.
 *
 *   sim-scenarios [-n COUNT] [-s SEED] [-S NAME] [-t] [-v] [-q] [--check]
 *                 [--oracle]
 *
 * -S NAME runs the named scenario (qc_scenario_named) instead; -t
 * traces the controller's decisions, a line a period, on stderr.
 * The seed is fresh unless given, and printed; each failing scenario is
 * printed with its seed, which reproduces it exactly (-s SEED -n 1 -v).
 * Every scenario is first checked for the world's own integrity
 * (world_broken); a broken world exits 3 whatever --check says.
 * --check: exit 1 when any scenario fails an invariant.
 * --oracle: for each failing scenario, whether some fixed levels per
 * class meet every goal the controller broke (oracle()): the failures a
 * law could answer, told from those where the goals ask more than any
 * fixed levels give.  It runs up to 216 more worlds a failing scenario.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apr_general.h"

#include "sim_world.h"

/* The goals the controller is held to (doc/control.md, Invariants). */
#define SIM_GOOD_MIN 0.85
#define SIM_REFUSE_MAX 0.001
#define SIM_FULL_MIN 0.98
#define SIM_ALONE_MIN 0.90
#define SIM_MIXED_MAX 0.01
/* Fluid rounding: a share of the requests below which a difference of
 * errors is no difference. */
#define SIM_ERRORS_SLACK 0.001

enum { INV_GOOD, INV_REFUSE, INV_GUARANTEE, INV_PREMIUM, INV_MIXED,
       INV_ERRORS, INV_N };
static const char *inv_name[INV_N] = { "goodput", "refusals", "guarantee",
                                       "premium", "mixing", "errors" };

typedef struct {
    double ratio;       /* goodput over the better fixed policy's */
    unsigned failed;    /* bit i: invariant i */
    char why[512];
} verdict_t;

static void why(verdict_t *v, int inv, const char *fmt, double a, double b)
{
    size_t l = strlen(v->why);

    v->failed |= 1u << inv;
    snprintf(v->why + l, sizeof(v->why) - l, " %s(", inv_name[inv]);
    l = strlen(v->why);
    snprintf(v->why + l, sizeof(v->why) - l, fmt, a, b);
    l = strlen(v->why);
    snprintf(v->why + l, sizeof(v->why) - l, ")");
}

static int verbose_runs;

/* The figures the summary gives, over every scenario judged: the share
 * refused where the lowest tree pinned answered everything in time, the
 * full-quality share of hosts within their contract, and premium's
 * full-quality share and goodput over its goodput alone. */
typedef struct {
    double *v;
    size_t n, cap;
} series_t;

static series_t refused_where_pinned_ok, guaranteed_full, premium_full,
                premium_alone;

/* While the oracle judges fixed levels, the series keep the
 * controller's figures alone. */
static int judging_fixed;

static void series_add(series_t *s, double x)
{
    if (judging_fixed) {
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = x;
}


static void show(const char *name, const sim_result_t *r,
                 unsigned npops)
{
    unsigned i;

    printf("  %-7s good %8.0f requests %8.0f refused %7.0f errors %7.0f "
           "U %.2f m_min %.2f\n", name, r->good, r->requests, r->refused,
           r->errors, r->u_mean, r->m_min);
    for (i = 0; i < npops; i++) {
        const sim_pop_result_t *p = &r->pop[i];

        printf("    pop %u offered %8.0f served %8.0f full %8.0f "
               "refused %7.0f errors %7.0f good %8.0f\n", i, p->offered,
               p->served, p->full, p->refused, p->errors, p->good);
    }
}

/*
 * Do a host's premium clients fit at full quality?  On a guaranteed
 * host within its contract; on a best-effort host, all best-effort
 * hosts' premium together within what the bound leaves after the
 * contracts and a background job.  Beyond that no policy serves them
 * all at full quality while holding the bound, and the goal left is
 * that basic clients cost them nothing (the goodput they get alone).
 */
static int premium_fits(const qc_scenario_t *sc, unsigned h)
{
    double load = 0.0, room = sc->bound - sc->background;
    unsigned i;

    for (i = 0; i < sc->nhosts; i++) {
        room -= sc->hosts[i].guaranteed ? sim_contract_share(sc, i) : 0.0;
    }
    for (i = 0; i < sc->npops; i++) {
        const qc_sc_pop_t *p = &sc->pops[i];

        if (p->premium && (p->host == h
                           || (!sc->hosts[h].guaranteed
                               && !sc->hosts[p->host].guaranteed))) {
            load += p->load;
        }
    }
    return load <= (sc->hosts[h].guaranteed ? sim_contract_share(sc, h)
                    : room);
}

/* What a policy is judged against: the fixed policies, and premium's
 * goodput alone under the controller.  Alone is without the basic
 * clients of its own host, whatever they do (the goal's words): other
 * hosts' clients stay, for what they take is theirs by contract or by
 * the spare's sharing, which the other goals judge.  Without them too,
 * a premium closed loop that fills the server by itself was held to the
 * whole server beside a guaranteed host's contract. */
typedef struct {
    sim_result_t plain, pinned, alone;
    unsigned premium;           /* 1 << each premium population */
} refs_t;

static void judge_refs(const qc_scenario_t *sc, refs_t *rf)
{
    unsigned i, h;

    sim_run(sc, SIM_PLAIN, ~0u, &rf->plain);
    sim_run(sc, SIM_PINNED, ~0u, &rf->pinned);
    rf->premium = 0;
    for (i = 0; i < sc->npops; i++) {
        rf->premium |= sc->pops[i].premium ? 1u << i : 0;
    }
    memset(&rf->alone, 0, sizeof(rf->alone));
    for (h = 0; h < sc->nhosts; h++) {
        unsigned without_basic = ~0u, has_premium = 0;
        sim_result_t r;

        for (i = 0; i < sc->npops; i++) {
            if (sc->pops[i].host == h) {
                has_premium |= sc->pops[i].premium;
                without_basic &= sc->pops[i].premium ? ~0u : ~(1u << i);
            }
        }
        if (!has_premium) {
            continue;
        }
        sim_run(sc, SIM_QOSCTL, without_basic, &r);
        for (i = 0; i < sc->npops; i++) {
            if (sc->pops[i].host == h && sc->pops[i].premium) {
                rf->alone.pop[i] = r.pop[i];
            }
        }
    }
}

static void judge(const qc_scenario_t *sc, verdict_t *v,
                  sim_policy_t policy, const refs_t *rf)
{
    const sim_result_t *plain = &rf->plain, *pinned = &rf->pinned;
    const sim_result_t *alone = &rf->alone;
    sim_result_t qc;
    double best, pages = 0.0, mixed = 0.0;
    unsigned i, h;

    memset(v, 0, sizeof(*v));
    sim_run(sc, policy, ~0u, &qc);
    if (verbose_runs) {
        show("plain", plain, sc->npops);
        show("pinned", pinned, sc->npops);
        show("qosctl", &qc, sc->npops);
    }
    best = plain->good > pinned->good ? plain->good : pinned->good;
    v->ratio = best > 0.0 ? qc.good / best : 1.0;
    if (qc.good < SIM_GOOD_MIN * best) {
        why(v, INV_GOOD, "%.2f of %.0f", v->ratio, best);
    }
    if (pinned->errors <= SIM_REFUSE_MAX * pinned->requests
        && qc.requests > 0.0) {
        series_add(&refused_where_pinned_ok, qc.refused / qc.requests);
    }
    if (pinned->errors <= SIM_REFUSE_MAX * pinned->requests
        && qc.refused > SIM_REFUSE_MAX * qc.requests) {
        why(v, INV_REFUSE, "%.4f of %.0f", qc.refused / qc.requests,
            qc.requests);
    }
    for (h = 0; h < sc->nhosts; h++) {
        double load = 0.0, offered = 0.0, full = 0.0;

        if (!sc->hosts[h].guaranteed) {
            continue;
        }
        for (i = 0; i < sc->npops; i++) {
            if (sc->pops[i].host == h) {
                load += sc->pops[i].load;
                offered += qc.pop[i].offered;
                full += qc.pop[i].full;
            }
        }
        if (load <= sim_contract_share(sc, h) && offered > 0.0) {
            series_add(&guaranteed_full, full / offered);
        }
        if (load <= sim_contract_share(sc, h) && offered > 0.0
            && full < SIM_FULL_MIN * offered) {
            why(v, INV_GUARANTEE, "host %.0f: %.3f full", (double)h,
                full / offered);
        }
    }
    for (i = 0; i < sc->npops; i++) {
        pages += qc.pop[i].pages;
        mixed += qc.pop[i].mixed;
    }
    if (rf->premium) {
        for (i = 0; i < sc->npops; i++) {
            const sim_pop_result_t *p = &qc.pop[i];
            int fits;

            if (!(rf->premium & (1u << i)) || !(p->served > 0.0)) {
                continue;
            }
            fits = premium_fits(sc, sc->pops[i].host);
            if (fits) {
                series_add(&premium_full, p->full / p->served);
            }
            if (alone->pop[i].good > 0.0) {
                series_add(&premium_alone, p->good / alone->pop[i].good);
            }
            if ((fits && p->full < SIM_FULL_MIN * p->served)
                || p->good < SIM_ALONE_MIN * alone->pop[i].good) {
                why(v, INV_PREMIUM, "%.3f full, %.2f of alone",
                    p->full / p->served,
                    alone->pop[i].good > 0.0 ? p->good / alone->pop[i].good
                    : 1.0);
            }
        }
    }
    if (pages > 0.0 && mixed > SIM_MIXED_MAX * pages) {
        why(v, INV_MIXED, "%.3f of %.0f pages", mixed / pages, pages);
    }
    best = plain->errors < pinned->errors ? plain->errors : pinned->errors;
    if (qc.errors > best + SIM_ERRORS_SLACK * qc.requests) {
        why(v, INV_ERRORS, "%.0f against %.0f", qc.errors, best);
    }
}

/* The world's own integrity, whatever the controller does: the fixed
 * policies refuse nothing, plain Apache serves only the top tree and the
 * pinned server only the lowest, nothing is served that was not asked
 * for, and the readings are numbers.  A failure is the simulator's bug,
 * not the controller's. */
static int world_broken(const qc_scenario_t *sc, char *msg, size_t len)
{
    sim_result_t r[3];
    int p, i;

    for (p = 0; p < 3; p++) {
        if (sim_run(sc, (sim_policy_t)p, ~0u, &r[p]) != 0) {
            snprintf(msg, len, "policy %d did not run", p);
            return 1;
        }
        if (!(r[p].u_mean >= 0.0 && r[p].u_mean <= 1.0 + 1e-9)
            || !(r[p].good >= 0.0) || !(r[p].errors >= 0.0)) {
            snprintf(msg, len, "policy %d: U %g good %g errors %g", p,
                     r[p].u_mean, r[p].good, r[p].errors);
            return 1;
        }
        for (i = 0; i < (int)sc->npops; i++) {
            const sim_pop_result_t *q = &r[p].pop[i];
            double asked = q->offered * (sc->pops[i].model == QC_SC_RETRY
                                         ? 4.0 : 1.0);

            /* what was in flight when the window opened is served in
             * it: a closed population's clients, or what the resource
             * does in a second */
            if (q->served > asked + 1.0 / sim_cost(sc, 1) + 1.0
                            + sc->pops[i].clients
                              * (sc->pops[i].model == QC_SC_H2 ? 10.0
                                 : 1.0)) {
                snprintf(msg, len, "policy %d pop %d: served %g of %g",
                         p, i, q->served, asked);
                return 1;
            }
        }
    }
    for (i = 0; i < (int)sc->npops; i++) {
        if (r[SIM_PLAIN].pop[i].refused > 0.0
            || r[SIM_PINNED].pop[i].refused > 0.0
            || r[SIM_PINNED].pop[i].full > 0.0
            || fabs(r[SIM_PLAIN].pop[i].full - r[SIM_PLAIN].pop[i].served)
               > 1e-6 * (1.0 + r[SIM_PLAIN].pop[i].served)) {
            snprintf(msg, len, "pop %d: a fixed policy's trees are off", i);
            return 1;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* "what: n, min, median, max" of a series, sorted in place. */
static void series_print(const char *what, series_t *s)
{
    if (!s->n) {
        printf("%s: none\n", what);
        return;
    }
    qsort(s->v, s->n, sizeof(*s->v), cmp_double);
    printf("%s: %zu, min %.4f, median %.4f, max %.4f\n", what, s->n,
           s->v[0], s->v[s->n / 2], s->v[s->n - 1]);
}

/*
 * The oracle: fixed levels per class (a guaranteed host's clients, best
 * effort's basic and premium), held through the whole scenario, on a
 * grid from refusing three quarters to the top tree.  Where some set
 * meets every goal the controller broke, a law that found it would
 * have met them too; where none does, the goals may ask more than any
 * fixed levels give.  Sets *each, bit k: some set meets goal k.
 * Returns 1 when one set meets them all, and writes it to best.
 */
static int oracle(const qc_scenario_t *sc, const refs_t *rf,
                  unsigned *each, double *best)
{
    static const double grid[] = { 0.25, 0.5, 0.75, 1.0, 1.5, 2.0 };
    unsigned ng = sizeof(grid) / sizeof(*grid), g, b, p, i, k;
    int has_g = 0, has_p = 0, met = 0;
    verdict_t v;

    for (i = 0; i < sc->npops; i++) {
        has_g |= sc->hosts[sc->pops[i].host].guaranteed;
        has_p |= sc->pops[i].premium
                 && !sc->hosts[sc->pops[i].host].guaranteed;
    }
    *each = 0;
    judging_fixed = 1;
    for (g = has_g ? 0 : ng - 1; g < ng; g++) {
        for (b = 0; b < ng; b++) {
            for (p = has_p ? 0 : ng - 1; p < ng; p++) {
                sim_set_fixed(grid[g], grid[b], grid[p]);
                judge(sc, &v, SIM_FIXED, rf);
                for (k = 0; k < INV_N; k++) {
                    *each |= ((v.failed >> k) & 1u) ? 0 : 1u << k;
                }
                if (!v.failed && !met) {
                    met = 1;
                    best[0] = grid[g];
                    best[1] = grid[b];
                    best[2] = grid[p];
                }
            }
        }
    }
    judging_fixed = 0;
    return met;
}

int main(int argc, char **argv)
{
    unsigned long long seed = 0, n = 1000, i;
    unsigned fails[INV_N] = { 0 }, failed = 0, broken = 0, k;
    int verbose = 0, quiet = 0, check = 0, have_seed = 0, a;
    int use_oracle = 0;
    unsigned met_all = 0, met_each[INV_N] = { 0 };
    const char *name = NULL;
    int trace = 0;
    double *ratios;
    char *end, json[4096];

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
            errno = 0;
            n = strtoull(argv[++a], &end, 10);
            if (errno || *end || n == 0 || n > 10000000) {
                fprintf(stderr, "sim-scenarios: bad count: %s\n", argv[a]);
                return 2;
            }
        }
        else if (strcmp(argv[a], "-s") == 0 && a + 1 < argc) {
            errno = 0;
            seed = strtoull(argv[++a], &end, 10);
            if (errno || *end) {
                fprintf(stderr, "sim-scenarios: bad seed: %s\n", argv[a]);
                return 2;
            }
            have_seed = 1;
        }
        else if (strcmp(argv[a], "-S") == 0 && a + 1 < argc) {
            name = argv[++a];
            n = 1;
        }
        else if (strcmp(argv[a], "-t") == 0) {
            trace = 1;
        }
        else if (strcmp(argv[a], "-v") == 0) {
            verbose = 1;
            verbose_runs = 1;
        }
        else if (strcmp(argv[a], "-q") == 0) {
            quiet = 1;
        }
        else if (strcmp(argv[a], "--check") == 0) {
            check = 1;
        }
        else if (strcmp(argv[a], "--oracle") == 0) {
            use_oracle = 1;
        }
        else {
            fprintf(stderr, "usage: sim-scenarios [-n COUNT] [-s SEED] "
                    "[-S NAME] [-t] [-v] [-q] [--check] [--oracle]\n");
            return 2;
        }
    }
    if (!have_seed) {
        seed = ((unsigned long long)time(NULL) << 20)
               ^ (unsigned long long)getpid();
    }
    if (trace) {
        sim_trace = stderr;
    }
    else if (!verbose && !freopen("/dev/null", "w", stderr)) {
        return 2;               /* the controller's warnings, thousands */
    }
    apr_initialize();
    ratios = malloc(n * sizeof(*ratios));
    printf("sim-scenarios: %llu scenarios from seed %llu\n", n, seed);
    for (i = 0; i < n; i++) {
        qc_scenario_t sc;
        verdict_t v;
        refs_t refs;

        if (name) {
            if (qc_scenario_named(&sc, name) != 0) {
                fprintf(stderr, "sim-scenarios: no scenario named %s\n",
                        name);
                return 2;
            }
        }
        else {
            qc_scenario_make(&sc, seed + i);
        }
        if (world_broken(&sc, json, sizeof(json))) {
            printf("%s %llu: BROKEN WORLD %s\n", name ? name : "seed",
                   name ? 0ULL : seed + i, json);
            broken++;
            ratios[i] = 1.0;
            continue;
        }
        judge_refs(&sc, &refs);
        judge(&sc, &v, SIM_QOSCTL, &refs);
        ratios[i] = v.ratio;
        failed += v.failed != 0;
        for (k = 0; k < INV_N; k++) {
            fails[k] += (v.failed >> k) & 1u;
        }
        if ((v.failed && !quiet) || verbose) {
            printf("%s %llu: %s goodput %.2f%s\n",
                   name ? name : "seed", name ? 0ULL : seed + i,
                   v.failed ? "FAIL" : "ok", v.ratio, v.why);
        }
        if (use_oracle && v.failed) {
            double lv[3] = { 0.0, 0.0, 0.0 };
            unsigned each;
            int met = oracle(&sc, &refs, &each, lv);

            met_all += met;
            for (k = 0; k < INV_N; k++) {
                met_each[k] += ((v.failed & each) >> k) & 1u;
            }
            if (!quiet) {
                if (met) {
                    printf("  oracle: met by fixed levels %.2f %.2f %.2f\n",
                           lv[0], lv[1], lv[2]);
                }
                else {
                    printf("  oracle: no fixed levels meet every goal\n");
                }
            }
        }
        if (verbose) {
            qc_scenario_json(&sc, json, sizeof(json));
            printf("  %s\n", json);
        }
    }
    qsort(ratios, n, sizeof(*ratios), cmp_double);
    printf("goodput over the better fixed policy: min %.3f, median %.3f\n",
           ratios[0], ratios[n / 2]);
    series_print("share refused where the lowest tree pinned served all "
                 "in time", &refused_where_pinned_ok);
    series_print("full-quality share of guaranteed hosts within contract",
                 &guaranteed_full);
    series_print("full-quality share of premium clients that fit",
                 &premium_full);
    series_print("premium goodput over its goodput alone", &premium_alone);
    printf("failed:");
    for (k = 0; k < INV_N; k++) {
        printf(" %s %u,", inv_name[k], fails[k]);
    }
    printf(" any %u of %llu\n", failed, n);
    if (use_oracle) {
        printf("oracle, of the failing scenarios: some fixed levels meet "
               "every goal in %u;", met_all);
        for (k = 0; k < INV_N; k++) {
            printf(" %s %u of %u%s", inv_name[k], met_each[k], fails[k],
                   k + 1 < INV_N ? "," : "\n");
        }
    }
    printf("world checks: %llu passed, %u failed\n", n - broken, broken);
    free(ratios);
    apr_terminate();
    return broken ? 3 : check && failed ? 1 : 0;
}
