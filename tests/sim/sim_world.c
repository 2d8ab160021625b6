/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apr_atomic.h"
#include "apr_general.h"

#include "qc_controller.h"
#include "qc_ctl_capacity.h"
#include "qc_decide.h"
#include "qc_level.h"
#include "qc_surge.h"
#include "qc_be_mode.h"
#include "sim_world.h"

#define M 2                     /* trees: 1 degraded, 2 full */

/* httpd's MaxRequestWorkers in Debian's mpm_event.conf, and the listen
 * backlog (ListenBacklog 511): beyond both the kernel drops. */
#define SIM_WORKERS 150.0
#define SIM_BACKLOG 511.0
/* s: requests of a population arriving this close together are one
 * cohort; a quarter of the shortest period, so a cohort never spans
 * two of the controller's decisions by more than that. */
#define SIM_COHORT 0.0625
/* s: the longest step; the shortest tick (QC_CTL_TICK_MIN).  Clients
 * that send again as soon as a reply comes (browsers fetching a page's
 * objects, closed loops with no think) send at most once a step, so for
 * them the step is the order of one request's time on a loaded server,
 * not the tick's. */
#define SIM_STEP_MAX 0.05
#define SIM_STEP_AT_ONCE 0.005
#define SIM_MAX_COHORTS 8192
/* s: a dropped connection attempt is the kernel's to retry, not the
 * client's: its SYN again after the initial retransmission timeout,
 * doubling each time (RFC 6298's 1 s, Linux's TCP_TIMEOUT_INIT).  The
 * client sees an error only once its own timeout passes. */
#define SIM_SYN_RTO 1.0
#define SIM_MAX_SYNS 8192
/* The link of the testbed: 100 Mbit/s, in bytes/s. */
#define SIM_LINK_BPS 12.5e6
/* Bytes of a request's headers on the link, and of a 503. */
#define SIM_HEADER_BYTES 600.0
#define SIM_REJECT_BYTES 440.0

typedef struct {
    unsigned pop;
    double born;
    double n[M + 1], left[M + 1];   /* by tree; [0] unused */
    double dirty;       /* browsers: share whose page has failed */
    int orphan;         /* its clients gave up; a CPU still works on it */
} sim_cohort_t;

typedef struct {
    double left, weight;        /* a run of requests in service */
} sim_run_t;

typedef struct {
    unsigned pop, tries;
    double born, due;   /* the first attempt; the next SYN */
    double n, dirty;
} sim_syn_t;

typedef struct {
    double thinking;    /* closed: clients waiting to send */
    double active;      /* closed: clients taking part */
    double again, again_dirty;      /* browsers: next objects to send */
    double inflight;
    double r_age, r_n;  /* response times of the last completions */
} sim_pop_t;

typedef struct {
    const qc_scenario_t *sc;
    sim_policy_t policy;
    unsigned mask;
    sim_cohort_t *c;
    unsigned nc;
    sim_syn_t syn[SIM_MAX_SYNS];    /* dropped attempts the kernel retries */
    unsigned nsyn;
    double attempts, drops;     /* the kernel's, since the last tick */
    double eligible[SIM_MAX_COHORTS];
    sim_run_t runs[SIM_MAX_COHORTS * M];
    sim_pop_t pop[QC_SC_MAX_POPS];
    double acc[QC_SC_MAX_HOSTS][QC_NCLASSES][3][M + 1];
    qc_shm_t *q;
    double m_prev[QC_SC_MAX_POPS];
    double surge_t;
    double surge_part;          /* arrivals not yet a whole count */
    double surge_part_premium;  /* the same, of premium's own count */
    sim_result_t *res;
} sim_t;

FILE *sim_trace;

double sim_bytes(const qc_scenario_t *sc, unsigned k)
{
    /* a 64 KB photo and its 8 KB copy; a CGI or PHP page and its
     * snapshot; a 503 */
    static const double link[] = { SIM_REJECT_BYTES, 8192.0, 65536.0 };
    static const double page[] = { SIM_REJECT_BYTES, 5000.0, 6000.0 };

    return sc->kind == QC_SC_CGI || sc->kind == QC_SC_PHP ? page[k]
           : link[k];
}

double sim_cost(const qc_scenario_t *sc, unsigned k)
{
    /* s of the resource: bench/RESULTS.md's calibrations of the
     * testbed; the link's from its bytes */
    static const double cgi[] = { 2e-5, 1e-4, 3e-3 };
    static const double php[] = { 2e-5, 1.5e-4, 5e-3 };
    static const double img[] = { 5e-5, 2.5e-4, 4e-4 };

    switch (sc->kind) {
    case QC_SC_LINK:
        return (SIM_HEADER_BYTES * (k > 0) + sim_bytes(sc, k))
               / SIM_LINK_BPS;
    case QC_SC_CGI:
        return cgi[k];
    case QC_SC_PHP:
        return php[k];
    default:
        return img[k];
    }
}

double sim_contract_share(const qc_scenario_t *sc, unsigned h)
{
    const qc_sc_host_t *g = &sc->hosts[h];

    if (!(g->rmax > 0.0)) {
        return g->rmax_share;
    }
    if (sc->kind == QC_SC_LINK) {
        return (g->rmax * SIM_HEADER_BYTES + g->wmax) / SIM_LINK_BPS;
    }
    return g->rmax * sim_cost(sc, M);
}

/* A population's own reply size, where it has one (the degraded reply
 * an eighth, as the sample site's photo and its copy). */
static double sim_pop_bytes(const qc_scenario_t *sc, unsigned pi,
                            unsigned k)
{
    double full = sc->pops[pi].bytes;

    if (!(full > 0.0) || k == 0) {
        return sim_bytes(sc, k);
    }
    return k == M ? full : full / 8.0;
}

static double sim_pop_cost(const qc_scenario_t *sc, unsigned pi,
                           unsigned k)
{
    if (sc->kind != QC_SC_LINK || !(sc->pops[pi].bytes > 0.0) || k == 0) {
        return sim_cost(sc, k);
    }
    return (SIM_HEADER_BYTES + sim_pop_bytes(sc, pi, k)) / SIM_LINK_BPS;
}

static unsigned sim_class(const qc_sc_pop_t *p)
{
    return p->premium ? QC_CLASS_PREMIUM : QC_CLASS_BASIC;
}

static double sim_fixed[3] = { M, M, M };

void sim_set_fixed(double guaranteed, double basic, double premium)
{
    sim_fixed[0] = guaranteed;
    sim_fixed[1] = basic;
    sim_fixed[2] = premium;
}

/* The level a population's requests meet under the policy. */
static double sim_level(const sim_t *s, const qc_sc_pop_t *p)
{
    if (s->policy == SIM_PLAIN) {
        return M;
    }
    if (s->policy == SIM_PINNED) {
        return 1.0;
    }
    if (s->policy == SIM_FIXED) {
        return s->sc->hosts[p->host].guaranteed ? sim_fixed[0]
               : p->premium ? sim_fixed[2] : sim_fixed[1];
    }
    return qc_level_from_fx(apr_atomic_read32(
        &s->q->slots[p->host].cls[sim_class(p)].level_fx));
}

static void sim_shares(double m, double *f)
{
    unsigned i = m >= M ? M : (unsigned)floor(m);

    memset(f, 0, (M + 1) * sizeof(*f));
    if (i >= M) {
        f[M] = 1.0;
        return;
    }
    f[i] = 1.0 - (m - i);
    f[i + 1] = m - i;
}

/* The segment's counters are whole requests: carry the fractions. */
static void sim_count(sim_t *s, const qc_sc_pop_t *p, unsigned what,
                      unsigned k, double n)
{
    qc_class_shm_t *cs;
    double *a = &s->acc[p->host][sim_class(p)][what][k];
    apr_uint64_t d = (apr_uint64_t)floor(*a + n) - (apr_uint64_t)floor(*a);

    *a += n;
    if (!s->q || d == 0) {
        return;
    }
    cs = &s->q->slots[p->host].cls[sim_class(p)];
    if (what == 0) {
        apr_atomic_add64(&cs->level_arrived[k], d);
    }
    else if (what == 1) {
        apr_atomic_add64(&cs->level_responses[k], d);
    }
    else {
        apr_atomic_add64(&cs->level_bytes[k], d);
    }
}

/* The module's log hook on a cohort's replies of tree k: responses and
 * their bytes. */
static void sim_log_replies(sim_t *s, const sim_cohort_t *c, unsigned k)
{
    const qc_sc_pop_t *p = &s->sc->pops[c->pop];

    sim_count(s, p, 1, k, c->n[k]);
    sim_count(s, p, 2, k, c->n[k] * sim_pop_bytes(s->sc, c->pop, k));
}

static int sim_measured(const sim_t *s, double t)
{
    return t >= s->sc->t_load + 1.0 || (s->sc->t_load == 0.0 && t >= 1.0);
}

static void sim_add(sim_t *s, unsigned pi, double t, const double *n,
                    double dirty)
{
    sim_cohort_t *c = NULL;
    double tot = 0.0, old = 0.0;
    unsigned k;

    for (k = 1; k <= M; k++) {
        tot += n[k];
    }
    if (!(tot > 0.0)) {
        return;
    }
    if (s->nc > 0) {
        unsigned j = s->nc;

        while (j-- > 0 && s->nc - j <= QC_SC_MAX_POPS) {
            if (s->c[j].pop == pi && !s->c[j].orphan
                && fabs(t - s->c[j].born) < SIM_COHORT) {
                c = &s->c[j];
                break;
            }
        }
    }
    if (!c) {
        if (s->nc == SIM_MAX_COHORTS) {
            abort();            /* a world larger than it can hold */
        }
        c = &s->c[s->nc++];
        memset(c, 0, sizeof(*c));
        c->pop = pi;
        c->born = t;
    }
    for (k = 1; k <= M; k++) {
        old += c->n[k];
        if (n[k] > 0.0) {
            c->left[k] = (c->left[k] * c->n[k]
                          + sim_pop_cost(s->sc, pi, k) * n[k])
                         / (c->n[k] + n[k]);
            c->n[k] += n[k];
        }
    }
    c->dirty = (c->dirty * old + dirty * tot) / (old + tot);
    s->pop[pi].inflight += tot;
}

/* Clients whose request ended (served, refused, failed) go on: closed
 * ones think, browsers fetch the page's next object or think. */
static void sim_return(sim_t *s, unsigned pi, double n, double dirty,
                       double t)
{
    const qc_sc_pop_t *p = &s->sc->pops[pi];
    sim_pop_t *sp = &s->pop[pi];
    sim_pop_result_t *r = &s->res->pop[pi];

    if (p->model == QC_SC_OPEN || p->model == QC_SC_RETRY || !(n > 0.0)) {
        return;
    }
    if (p->model == QC_SC_BROWSER) {
        double end = n / (p->objects + 1.0), more = n - end;

        if (sim_measured(s, t)) {
            r->pages += end;
            r->whole += end * (1.0 - dirty);
            r->good += end * (1.0 - dirty) * (p->objects + 1.0);
        }
        sp->again_dirty = (sp->again_dirty * sp->again + dirty * more)
                          / fmax(sp->again + more, 1e-12);
        sp->again += more;
        sp->thinking += end;
        return;
    }
    sp->thinking += n;
}

/* Attempts the accept queues had no room for wait for the kernel's next
 * SYN; those of a population past its clients' timeout fail.  Returns
 * how many are due at t. */
static double sim_syn_due(sim_t *s, unsigned pi, double t)
{
    const qc_sc_pop_t *p = &s->sc->pops[pi];
    double due = 0.0;
    unsigned j, w = 0;

    for (j = 0; j < s->nsyn; j++) {
        sim_syn_t *e = &s->syn[j];

        if (e->pop == pi && t - e->born > p->timeout) {
            if (sim_measured(s, t)) {
                s->res->pop[pi].errors += e->n;
            }
            sim_return(s, pi, e->n, 1.0, t);
            continue;
        }
        due += e->pop == pi && e->due <= t ? e->n : 0.0;
        s->syn[w++] = *e;
    }
    s->nsyn = w;
    return due;
}

static void sim_syn_push(sim_t *s, unsigned pi, double born, double t,
                         double n, double dirty, unsigned tries)
{
    sim_syn_t *e = NULL;
    unsigned j;

    if (!(n > 1e-12)) {
        return;
    }
    for (j = s->nsyn; j-- > 0 && !e;) {
        if (s->syn[j].pop == pi && s->syn[j].tries == tries
            && fabs(s->syn[j].born - born) < SIM_COHORT) {
            e = &s->syn[j];
        }
    }
    if (!e) {
        if (s->nsyn == SIM_MAX_SYNS) {
            abort();            /* a world larger than it can hold */
        }
        e = &s->syn[s->nsyn++];
        e->pop = pi;
        e->tries = tries;
        e->born = born;
        e->n = e->dirty = 0.0;
    }
    e->dirty = (e->dirty * e->n + dirty * n) / (e->n + n);
    e->n += n;
    e->due = t + SIM_SYN_RTO * (double)(1u << tries);
}

/* The share `keep` of the attempts due at t gets in, at the levels'
 * shares f; the rest waits for the next SYN.  Returns the seconds of the
 * resource their 503s took. */
static double sim_syn_retry(sim_t *s, unsigned pi, double t, double keep,
                            const double *f)
{
    const qc_sc_pop_t *p = &s->sc->pops[pi];
    double busy = 0.0, in[M + 1];
    unsigned j, k, n0 = s->nsyn;

    for (j = 0; j < n0; j++) {
        sim_syn_t *e = &s->syn[j];
        double got = e->n * keep;

        if (e->pop != pi || e->due > t) {
            continue;
        }
        for (k = 1; k <= M; k++) {
            in[k] = got * f[k];
            sim_count(s, p, 0, k, in[k]);
        }
        if (sim_measured(s, t)) {
            s->res->pop[pi].refused += got * f[0];
        }
        busy += got * f[0] * sim_cost(s->sc, 0);
        sim_add(s, pi, e->born, in, e->dirty);
        sim_return(s, pi, got * f[0], 1.0, t);
        e->n -= got;
        e->tries++;
        e->due = t + SIM_SYN_RTO * (double)(1u << e->tries);
    }
    return busy;
}

/* Adds n arrivals to a request path's count, which counts whole
 * requests: the fraction waits in *part. */
static void sim_count_whole(double *part, volatile apr_uint64_t *count,
                            double n)
{
    double whole;

    *part += n;
    whole = floor(*part);
    *part -= whole;
    *count += (apr_uint64_t)whole;
}

/* Who arrives in a step of dt at time t, and what becomes of them. */
static double sim_arrive(sim_t *s, unsigned pi, double t, double dt)
{
    const qc_scenario_t *sc = s->sc;
    const qc_sc_pop_t *p = &sc->pops[pi];
    sim_pop_t *sp = &s->pop[pi];
    sim_pop_result_t *r = &s->res->pop[pi];
    double mult = qc_scenario_shape(sc, t), f[M + 1], n, first, refused;
    double cost = sim_pop_cost(sc, pi, M), light = sc->light / sc->npops;
    double dirty = 0.0, m = sim_level(s, p), in[M + 1], drop = 0.0, tot;
    double retry = sim_syn_due(s, pi, t), keep = 1.0;
    int meas = sim_measured(s, t);
    unsigned k;

    sim_shares(m, f);
    if (p->model == QC_SC_OPEN || p->model == QC_SC_RETRY) {
        n = (mult < 0.0 ? light : p->load * mult) / cost * dt;
        first = n;
        if (p->model == QC_SC_RETRY) {
            /* each 503 retried at once, three times */
            n = first * (1.0 + f[0] + f[0] * f[0] + f[0] * f[0] * f[0]);
        }
    }
    else {
        double want = p->clients * (p->model == QC_SC_H2 ? 10.0 : 1.0);

        if (mult < 0.0) {
            want = p->model == QC_SC_CLOSED ? 1.0
                   : ceil(want * fmin(1.0, light / p->load));
        }
        else {
            want = ceil(want * mult);
        }
        if (want > sp->active) {
            sp->thinking += want - sp->active;
            sp->active = want;
        }
        else if (want < sp->active) {
            double gone = fmin(sp->active - want, sp->thinking);

            sp->thinking -= gone;
            sp->active -= gone;
        }
        n = sp->thinking * (p->think > 0.0 ? 1.0 - exp(-dt / p->think)
                            : 1.0);
        sp->thinking -= n;
        if (p->model == QC_SC_BROWSER) {
            dirty = sp->again_dirty * sp->again / fmax(sp->again + n, 1e-12);
            n += sp->again;
            sp->again = 0.0;
            sp->again_dirty = 0.0;
        }
        first = n;
    }
    refused = n * f[0];
    for (k = 1; k <= M; k++) {
        in[k] = n * f[k];
    }
    if (s->policy == SIM_QOSCTL) {
        /* the request path's surge guard (qc_surge.h, qc_request.c):
         * every request counts, refused ones too; premium's also by
         * themselves, against which alone they are judged; a guaranteed
         * host's are never sent down (its own loop holds its share) */
        qc_shm_t *q = s->q;
        double rate = qc_bitsd(q->surge_rate_bits);
        double room = p->premium
                      ? qc_bitsd(q->surge_premium_base_bits)
                        - (double)q->surge_premium
                      : qc_bitsd(q->surge_base_bits)
                        - (double)q->surge_arrived;
        double over = n - fmax(room + rate * s->surge_t, 0.0);

        if (rate > 0.0 && over > 0.0 && n > 0.0
            && !sc->hosts[p->host].guaranteed) {
            double moved = in[M] * fmin(over / n, 1.0);

            in[M] -= moved;
            in[1] += moved;
        }
        sim_count_whole(&s->surge_part, &q->surge_arrived, n);
        if (p->premium) {
            sim_count_whole(&s->surge_part_premium, &q->surge_premium, n);
        }
    }
    sim_count(s, p, 0, 0, refused);
    tot = 0.0;
    for (k = 1; k <= M; k++) {
        tot += in[k];
    }
    if (sc->bounded_queue) {
        double all = 0.0, room;
        unsigned j;

        for (j = 0; j < sc->npops; j++) {
            all += s->pop[j].inflight;
        }
        room = fmax(SIM_WORKERS + SIM_BACKLOG - all, 0.0);
        if (tot + retry > room) {
            keep = room / (tot + retry);
            drop = tot * (1.0 - keep);
            for (k = 1; k <= M; k++) {
                in[k] *= keep;
            }
        }
        /* what the kernel counts (ListenDrops against attempts), which
         * the module reads from /proc/net/netstat */
        s->attempts += n + retry;
        s->drops += (tot + retry) * (1.0 - keep);
    }
    /* httpd counts what the kernel let in: a dropped attempt never
     * reaches the module's counters */
    for (k = 1; k <= M; k++) {
        sim_count(s, p, 0, k, in[k]);
    }
    if (meas) {
        r->offered += first;
        r->refused += first * f[0];
        if (p->model == QC_SC_RETRY) {
            /* a job fails once its fourth try is refused */
            r->errors += first * f[0] * f[0] * f[0] * f[0];
        }
    }
    sim_add(s, pi, t, in, dirty);
    /* 503s come back at once; dropped attempts at the kernel's next SYN */
    sim_return(s, pi, refused, 1.0, t);
    sim_syn_push(s, pi, t, t, drop, dirty, 0);
    return refused * sim_cost(sc, 0) + sim_syn_retry(s, pi, t, keep, f);
}

/* A step of processor sharing: every request in service gets the same
 * seconds of the resource, the longest waiting first past the workers.
 * Returns the seconds of work done. */
static double sim_serve_once(sim_t *s, double t, double cap)
{
    const qc_scenario_t *sc = s->sc;
    double done = 0.0, delta = 0.0, left = cap, slots, weight = 0.0;
    double *e = s->eligible;
    sim_run_t *run = s->runs;
    unsigned j, k, nrun = 0;

    slots = sc->bounded_queue ? SIM_WORKERS : 1e18;
    for (j = 0; j < s->nc; j++) {
        double n = 0.0;

        for (k = 1; k <= M; k++) {
            n += s->c[j].n[k];
        }
        if (n > slots && slots > 1e-9 && s->nc < SIM_MAX_COHORTS) {
            /* the workers take part of the cohort: split it, the rest
             * waits in the accept queue */
            double f = slots / n;

            memmove(&s->c[j + 1], &s->c[j], (s->nc - j) * sizeof(*s->c));
            s->nc++;
            for (k = 1; k <= M; k++) {
                s->c[j].n[k] *= f;
                s->c[j + 1].n[k] *= 1.0 - f;
            }
            n = slots;
        }
        e[j] = n > 0.0 && slots >= n - 1e-9 ? 1.0 : 0.0;
        slots -= n;
        for (k = 1; k <= M && e[j] > 0.0; k++) {
            if (s->c[j].n[k] > 0.0) {
                run[nrun].left = s->c[j].left[k];
                run[nrun++].weight = s->c[j].n[k];
                weight += s->c[j].n[k];
            }
        }
    }
    /* Processor sharing: every request in service gets the same delta
     * seconds, those that need less finishing early and giving the rest
     * to the others (water-filling over the rests, smallest first). */
    /* insertion sort: the oldest requests have the least left, so the
     * runs come nearly sorted */
    for (j = 1; j < nrun; j++) {
        sim_run_t x = run[j];
        unsigned i = j;

        while (i > 0 && run[i - 1].left > x.left) {
            run[i] = run[i - 1];
            i--;
        }
        run[i] = x;
    }
    for (j = 0; j < nrun && left > 1e-15; j++) {
        double need = (run[j].left - delta) * weight;

        if (need >= left) {
            break;
        }
        left -= need;
        delta = run[j].left;
        weight -= run[j].weight;
    }
    if (j < nrun && weight > 0.0) {
        delta += left / weight;
    }
    for (j = 0; j < s->nc; j++) {
        sim_cohort_t *c = &s->c[j];
        const qc_sc_pop_t *p = &sc->pops[c->pop];

        for (k = 1; k <= M; k++) {
            double give, n = c->n[k];

            if (!(n > 0.0)) {
                continue;
            }
            give = fmin(c->left[k], delta * e[j]);
            done += give * n;
            c->left[k] -= give;
            if (c->left[k] > 1e-12 || e[j] < 1.0) {
                continue;
            }
            /* the cohort's requests of tree k are served */
            sim_log_replies(s, c, k);
            c->n[k] = 0.0;
            s->pop[c->pop].inflight -= n;
            if (c->orphan) {
                continue;
            }
            if (sim_measured(s, t)) {
                sim_pop_result_t *r = &s->res->pop[c->pop];

                r->served += n;
                r->full += k == M ? n : 0.0;
                if (p->model != QC_SC_BROWSER) {
                    r->good += n;
                }
                if (p->model == QC_SC_RETRY) {
                    r->jobs_ok += n;
                }
            }
            s->pop[c->pop].r_age += n * (t - c->born);
            s->pop[c->pop].r_n += n;
            sim_return(s, c->pop, n, c->dirty, t);
        }
    }
    return done;
}

/* Workers freed within the step take the next waiting requests. */
static double sim_serve(sim_t *s, double t, double cap)
{
    double done = 0.0;
    unsigned round;

    for (round = 0; round < 4 && cap - done > 1e-9; round++) {
        double d = sim_serve_once(s, t, cap - done);

        done += d;
        if (!(d > 1e-12) || !s->sc->bounded_queue) {
            break;
        }
    }
    return done;
}

/* httpd logs a reply whose client went away as it logs any other, at
 * the body's size: the content-length filter counted it whole
 * (r->bytes_sent) before the link sent it. */
static void sim_log_aborted(sim_t *s, const sim_cohort_t *c)
{
    unsigned k;

    for (k = 1; k <= M; k++) {
        if (c->n[k] > 0.0) {
            sim_log_replies(s, c, k);
        }
    }
}

/* Clients that waited past their timeout give up: an error, and the
 * client goes on; a link stops sending to them, a CPU does not notice. */
static void sim_timeouts(sim_t *s, double t)
{
    unsigned j, w = 0, k;

    for (j = 0; j < s->nc; j++) {
        sim_cohort_t *c = &s->c[j];
        const qc_sc_pop_t *p = &s->sc->pops[c->pop];
        double n = 0.0;

        for (k = 1; k <= M; k++) {
            n += c->n[k];
        }
        if (n <= 1e-9) {
            s->pop[c->pop].inflight -= n;
            continue;
        }
        if (!c->orphan && t - c->born > p->timeout) {
            if (sim_measured(s, t)) {
                s->res->pop[c->pop].errors += n;
            }
            sim_return(s, c->pop, n, 1.0, t);
            if (s->sc->kind == QC_SC_LINK) {
                sim_log_aborted(s, c);
                s->pop[c->pop].inflight -= n;
                continue;
            }
            c->orphan = 1;
        }
        s->c[w++] = *c;
    }
    s->nc = w;
}

/* Browsers whose client moved to the other tree within a page that is
 * past what a kept connection holds (QC_KEEP_AGE, QC_KEEP_RUN). */
static void sim_mixing(sim_t *s, double t)
{
    unsigned i;

    for (i = 0; i < s->sc->npops; i++) {
        const qc_sc_pop_t *p = &s->sc->pops[i];
        sim_pop_t *sp = &s->pop[i];
        double m = sim_level(s, p), was = s->m_prev[i], moved, page, r;
        double longer;

        s->m_prev[i] = m;
        if (p->model != QC_SC_BROWSER || !(s->mask & (1u << i))
            || m < 1.0 || was < 1.0 || !sim_measured(s, t)) {
            continue;
        }
        moved = fabs(fmin(m, M) - fmin(was, M));
        if (moved > 1.0) {
            moved = 1.0;
        }
        r = sp->r_n > 0.0 ? sp->r_age / sp->r_n : 0.0;
        page = (p->objects + 1.0) * r;
        longer = page > QC_KEEP_AGE ? 1.0 - QC_KEEP_AGE / page : 0.0;
        if (p->objects + 1 > QC_KEEP_RUN) {
            longer = fmax(longer, 1.0 - (double)QC_KEEP_RUN
                                  / (p->objects + 1.0));
        }
        s->res->pop[i].mixed += moved * (sp->active - sp->thinking)
                                * longer;
    }
}

static double sim_step_max(const qc_scenario_t *sc)
{
    unsigned i;

    for (i = 0; i < sc->npops; i++) {
        if (sc->pops[i].model == QC_SC_BROWSER
            || sc->pops[i].model == QC_SC_CLOSED) {
            return SIM_STEP_AT_ONCE;
        }
    }
    return SIM_STEP_MAX;
}

static double sim_background(const qc_scenario_t *sc, double t)
{
    return sc->shape == QC_SC_BACKGROUND && t >= sc->t_load
           && t < sc->t_end ? sc->background : 0.0;
}

static void sim_controller(apr_pool_t *pool, const qc_scenario_t *sc,
                           qc_shm_t *q, qc_ctl_t *ctl, qc_ctl_config_t *cfg,
                           qc_ctl_vs_t *vs)
{
    static const char *names[] = { "h0:80", "h1:80", "h2:80" };
    double full = sim_cost(sc, M);
    unsigned i, k;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < sc->nhosts; i++) {
        q->slots[i].in_use = 1;
        q->slots[i].ntrees = M;
        strcpy(q->slots[i].key, names[i]);
        for (k = 0; k < QC_NCLASSES; k++) {
            q->slots[i].cls[k].level_fx = qc_level_to_fx(M, M);
            q->slots[i].cls[k].loop_fx = qc_level_to_fx(M, M);
        }
        memset(&vs[i], 0, sizeof(vs[i]));
        vs[i].name = names[i];
        vs[i].slot = &q->slots[i];
        vs[i].levels = M;
        vs[i].guaranteed = sc->hosts[i].guaranteed;
        vs[i].rmax = sc->hosts[i].rmax > 0.0 ? sc->hosts[i].rmax
                     : sc->hosts[i].rmax_share / full;
        vs[i].wmax = sc->hosts[i].wmax > 0.0 ? sc->hosts[i].wmax
                     : vs[i].rmax * sim_bytes(sc, M);
    }
    cfg->bound = sc->bound;
    cfg->period = sc->period;
    cfg->gain_margin = 4.0;
    if (sc->kind == QC_SC_LINK) {
        cfg->a0 = SIM_HEADER_BYTES / SIM_LINK_BPS * sc->prior;
        cfg->b0 = sc->prior / SIM_LINK_BPS;
    }
    else {
        cfg->a0 = full * sc->prior;
        cfg->b0 = 0.0;
    }
    cfg->c0 = sim_cost(sc, 0) * sc->prior;
    cfg->shm = q;
    cfg->vs = vs;
    cfg->nvs = sc->nhosts;
    cfg->log_fd = -1;
    cfg->state_fd = -1;
    qc_ctl_init(ctl, cfg, pool);
}

/* Connections the workers have not taken: the accept queue. */
static long sim_accept_queue(const sim_t *s)
{
    double queued = 0.0;
    unsigned j, k;

    if (!s->sc->bounded_queue) {
        return 0;
    }
    for (j = 0; j < s->nc; j++) {
        for (k = 1; k <= M; k++) {
            queued += s->c[j].n[k];
        }
    }
    return (long)fmax(queued - SIM_WORKERS, 0.0);
}

int sim_run(const qc_scenario_t *sc, sim_policy_t policy, unsigned pops,
            sim_result_t *res)
{
    apr_pool_t *pool = NULL;
    qc_ctl_t ctl;
    qc_ctl_config_t cfg;
    qc_ctl_vs_t vs[QC_SC_MAX_HOSTS];
    static sim_t s;
    unsigned ticks = (unsigned)(sc->period / QC_CTL_TICK_MIN), steps, i;
    double tick_len, dt, t = 0.0, busy_tick = 0.0, busy_period = 0.0;
    double u_sum = 0.0, u_n = 0.0, since_tick = 0.0, since_period = 0.0;
    unsigned step = 0;
    long queued;

    memset(&s, 0, sizeof(s));
    memset(res, 0, sizeof(*res));
    res->m_min = M;
    s.sc = sc;
    s.policy = policy;
    s.mask = pops;
    s.res = res;
    s.c = malloc(SIM_MAX_COHORTS * sizeof(*s.c));
    ticks = ticks < 1 ? 1 : ticks > QC_CTL_TICKS ? QC_CTL_TICKS : ticks;
    tick_len = sc->period / ticks;
    steps = (unsigned)ceil(tick_len / sim_step_max(sc) - 1e-9);
    dt = tick_len / steps;
    if (policy == SIM_QOSCTL) {
        if (apr_pool_create(&pool, NULL) != APR_SUCCESS) {
            free(s.c);
            return -1;
        }
        s.q = apr_pcalloc(pool, QC_SHM_SIZE(QC_SC_MAX_HOSTS));
        s.q->capacity = QC_SC_MAX_HOSTS;
        sim_controller(pool, sc, s.q, &ctl, &cfg, vs);
    }
    for (i = 0; i < sc->npops; i++) {
        s.m_prev[i] = sim_level(&s, &sc->pops[i]);
    }
    while (t < sc->duration) {
        double cap = dt * (1.0 - sim_background(sc, t)), busy = 0.0;

        for (i = 0; i < sc->npops; i++) {
            if (pops & (1u << i)) {
                busy += sim_arrive(&s, i, t, dt);
            }
        }
        busy += sim_serve(&s, t + dt, fmax(cap - busy, 0.0));
        sim_timeouts(&s, t + dt);
        t += dt;
        s.surge_t += dt;
        busy = fmin(busy / dt + sim_background(sc, t - dt), 1.0) * dt;
        busy_tick += busy;
        busy_period += busy;
        since_tick += dt;
        since_period += dt;
        if (sim_measured(&s, t)) {
            u_sum += busy;
            u_n += dt;
        }
        sim_mixing(&s, t);
        if (++step % steps != 0) {
            continue;
        }
        queued = sim_accept_queue(&s);
        if (policy == SIM_QOSCTL) {
            qc_ctl_capacity_tick(&ctl, since_tick, queued, (long)SIM_BACKLOG,
                                 sc->bounded_queue ? s.attempts : -1.0,
                                 sc->bounded_queue ? s.drops : -1.0);
            qc_ctl_tick(&ctl, since_tick, busy_tick / since_tick);
        }
        s.attempts = s.drops = 0.0;
        busy_tick = since_tick = 0.0;
        if (step % (steps * ticks) != 0) {
            continue;
        }
        if (policy == SIM_QOSCTL) {
            qc_ctl_input_t in;
            double work = 0.0;
            unsigned j, k;

            for (j = 0; j < s.nc; j++) {
                for (k = 1; k <= M; k++) {
                    work += s.c[j].n[k] * s.c[j].left[k];
                }
            }
            in = qc_ctl_input(since_period, busy_period / since_period,
                              queued, (apr_int64_t)(t * 1e6));
            if (sc->kind == QC_SC_LINK) {
                in.sendq_bytes = work * SIM_LINK_BPS;
                in.link_bps = SIM_LINK_BPS;
            }
            qc_ctl_step(&ctl, in);
            s.surge_t = 0.0;
            if (sim_trace) {
                fprintf(sim_trace, "t %6.2f U %.3f wait %.3f m_b %.3f "
                        "%-10s %-7s", t, in.u, ctl.wait,
                        qc_pi_output(&ctl.be), qc_be_mode_name(ctl.be_mode),
                        qc_refuse_gate_name(qc_ctl_refuse_gate(&ctl)));
                for (j = 0; j < sc->npops; j++) {
                    fprintf(sim_trace, " m%u %.2f", j,
                            sim_level(&s, &sc->pops[j]));
                }
                /* the calibration and the fit's costs of the top
                 * tree, the lowest and a 503, and its background */
                fprintf(sim_trace, " k %.2f a %.2g %.2g c %.2g d %.2f",
                        ctl.calib.k, qc_rls_a(&ctl.rls),
                        qc_rls_a_tree(&ctl.rls, M - 1), qc_rls_c(&ctl.rls),
                        qc_rls_d(&ctl.rls));
                fprintf(sim_trace, " | %s\n", qc_be_why_text(ctl.be_why));
            }
            for (j = 0; j < sc->npops && sim_measured(&s, t); j++) {
                res->m_min = fmin(res->m_min, sim_level(&s, &sc->pops[j]));
            }
        }
        busy_period = since_period = 0.0;
    }
    for (i = 0; i < sc->npops; i++) {
        sim_pop_result_t *r = &res->pop[i];

        r->seconds = u_n;
        res->good += r->good;
        res->requests += r->offered;
        res->refused += r->refused;
        res->errors += r->errors;
    }
    res->u_mean = u_n > 0.0 ? u_sum / u_n : 0.0;
    free(s.c);
    if (pool) {
        apr_pool_destroy(pool);
    }
    return 0;
}
