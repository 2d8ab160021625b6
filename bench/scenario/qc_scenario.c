/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qc_scenario.h"

/* The ranges sampled; the issue of each is what real users send. */
#define SC_PERIOD_MIN 0.25      /* s: QosCtlPeriod's range in practice */
#define SC_PERIOD_MAX 2.0
#define SC_BOUND_MIN 0.5        /* below the paper's 0.58 ... */
#define SC_BOUND_MAX 0.95       /* ... to throughput-only hosting */
#define SC_LOAD_MIN 0.2         /* shares of the resource at full quality */
#define SC_LOAD_MAX 8.0
#define SC_CLIENTS_MAX 2000
#define SC_ADDRESSES_MAX 1000
#define SC_THINK_MAX 5.0        /* s */
#define SC_OBJECTS_MAX 40
#define SC_LIGHT 0.1            /* shares: the load before the step */
#define SC_TIMEOUT 5.0          /* s: httperf's and the bench's default */
#define SC_PERIODS 30           /* periods under load, at least */

uint64_t qc_sc_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double qc_sc_unit(uint64_t *state)
{
    return (double)(qc_sc_next(state) >> 11) / 9007199254740992.0;
}

static double sc_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * qc_sc_unit(s);
}

static double sc_log_uniform(uint64_t *s, double lo, double hi)
{
    return exp(sc_uniform(s, log(lo), log(hi)));
}

static unsigned sc_pick(uint64_t *s, unsigned n)
{
    return (unsigned)(qc_sc_unit(s) * n) % n;
}

/* What a full-quality request costs the resource, s: the testbed's
 * (bench/RESULTS.md, calibration): a 64 KB photo on 100 Mbit/s, a CGI
 * page, a PHP page, a static image on the CPU. */
static double sc_full_cost(qc_sc_kind_t k)
{
    static const double cost[QC_SC_NKINDS] = { 5.32e-3, 3e-3, 5e-3, 4e-4 };

    return cost[k];
}

/* Clients for a closed population to offer `load` at think `think`: each
 * sends a request per think + cost seconds. */
static void sc_closed(qc_sc_pop_t *p, double cost)
{
    double per = p->think + cost;
    double n = p->load * per / cost;

    if (p->model == QC_SC_BROWSER) {
        n = p->load * (p->think + (p->objects + 1) * cost)
            / ((p->objects + 1) * cost);
    }
    else if (p->model == QC_SC_H2) {
        n /= 10.0;              /* ten streams a connection */
    }
    n = fmin(fmax(floor(n + 0.5), 1.0), SC_CLIENTS_MAX);
    p->clients = (unsigned)n;
    /* what those clients can offer, as the closed loop limits them */
    if (p->model == QC_SC_BROWSER) {
        p->load = n * (p->objects + 1) * cost
                  / (p->think + (p->objects + 1) * cost);
    }
    else {
        p->load = n * (p->model == QC_SC_H2 ? 10.0 : 1.0) * cost / per;
    }
}

static void sc_pop(qc_scenario_t *sc, uint64_t *s, unsigned host,
                   int premium)
{
    qc_sc_pop_t *p = &sc->pops[sc->npops++];
    const qc_sc_host_t *h = &sc->hosts[host];

    memset(p, 0, sizeof(*p));
    p->host = host;
    p->premium = premium;
    p->model = (qc_sc_model_t)sc_pick(s, QC_SC_NMODELS);
    p->timeout = SC_TIMEOUT;
    if (premium) {
        p->load = sc_log_uniform(s, 0.02, 0.4);
    }
    else if (h->guaranteed && qc_sc_unit(s) < 0.6) {
        /* within the contract: the guarantee's promise applies */
        p->load = h->rmax_share * sc_uniform(s, 0.3, 1.0);
    }
    else {
        p->load = sc_log_uniform(s, SC_LOAD_MIN, SC_LOAD_MAX);
    }
    p->objects = p->model == QC_SC_BROWSER
                 ? 1 + sc_pick(s, SC_OBJECTS_MAX) : 0;
    switch (p->model) {
    case QC_SC_OPEN:
    case QC_SC_RETRY:
        p->clients = 0;
        break;
    case QC_SC_CLOSED:
        p->think = 0.0;
        p->clients = 1 + (unsigned)sc_log_uniform(s, 1.0, SC_CLIENTS_MAX);
        p->clients = p->clients > SC_CLIENTS_MAX ? SC_CLIENTS_MAX
                     : p->clients;
        break;
    default:
        p->think = sc_uniform(s, 0.0, SC_THINK_MAX);
        sc_closed(p, sc_full_cost(sc->kind));
        break;
    }
    if (p->model == QC_SC_CLOSED) {
        p->load = 1e9;          /* as much as the resource gives */
    }
    p->addresses = 1 + (unsigned)sc_log_uniform(s, 1.0, SC_ADDRESSES_MAX);
    if (p->clients > 0 && p->addresses > p->clients) {
        p->addresses = p->clients;
    }
    if (p->addresses > SC_ADDRESSES_MAX) {
        p->addresses = SC_ADDRESSES_MAX;
    }
}

void qc_scenario_make(qc_scenario_t *sc, uint64_t seed)
{
    uint64_t s = seed;
    double guaranteed = 0.0, fit;
    unsigned i;

    memset(sc, 0, sizeof(*sc));
    sc->seed = seed;
    sc->kind = (qc_sc_kind_t)sc_pick(&s, QC_SC_NKINDS);
    sc->shape = (qc_sc_shape_t)sc_pick(&s, QC_SC_NSHAPES);
    sc->period = sc_log_uniform(&s, SC_PERIOD_MIN, SC_PERIOD_MAX);
    sc->bound = sc_uniform(&s, SC_BOUND_MIN, SC_BOUND_MAX);
    sc->prior = 1.0;
    sc->light = SC_LIGHT;
    sc->t_load = sc->shape == QC_SC_COLD ? 0.0 : 5.0 + 3.0 * sc->period;
    sc->duration = sc->t_load + fmax(30.0, SC_PERIODS * sc->period);
    sc->t_end = sc->duration;
    switch (sc->shape) {
    case QC_SC_COLD:
        sc->prior = qc_sc_unit(&s) < 0.5 ? 10.0 : 0.1;
        break;
    case QC_SC_FLASH:
        sc->t_end = sc->t_load + sc_uniform(&s, 0.3, 0.6)
                    * (sc->duration - sc->t_load);
        break;
    case QC_SC_BACKGROUND:
        sc->background = sc_uniform(&s, 0.2, 0.7);
        sc->t_end = sc->t_load + 0.5 * (sc->duration - sc->t_load);
        break;
    default:
        break;
    }
    /* a link's httpd keeps up with its clients; a CPU site's workers
     * and accept queue fill */
    sc->bounded_queue = sc->kind != QC_SC_LINK || qc_sc_unit(&s) < 0.5;
    sc->nhosts = 1 + sc_pick(&s, QC_SC_MAX_HOSTS);
    for (i = 0; i < sc->nhosts; i++) {
        qc_sc_host_t *h = &sc->hosts[i];

        h->guaranteed = qc_sc_unit(&s) < 0.4;
        h->rmax_share = h->guaranteed ? sc_uniform(&s, 0.05, 0.3) : 0.0;
        h->premium_list = qc_sc_unit(&s) < 0.4;
        guaranteed += h->rmax_share;
    }
    /* The contracts fit under the bound at the prior's costs: apachectl
     * -t prices them at QosCtlModel and refuses a plan past the bound
     * (QC10006), so a prior 10x high leaves room for a tenth. */
    fit = 0.7 * sc->bound / fmax(sc->prior, 1.0);
    for (i = 0; guaranteed > fit && i < sc->nhosts; i++) {
        sc->hosts[i].rmax_share *= fit / guaranteed;
    }
    for (i = 0; i < sc->nhosts && sc->npops < QC_SC_MAX_POPS; i++) {
        sc_pop(sc, &s, i, 0);
        if (sc->hosts[i].premium_list && qc_sc_unit(&s) < 0.7) {
            sc_pop(sc, &s, i, 1);
        }
    }
}

/* The link testbed's cost of a reply of `bytes`, s: its bytes and a
 * request's 600 bytes of headers at 100 Mbit/s. */
static double sc_link_cost(double bytes)
{
    return (600.0 + bytes) / 12.5e6;
}

static qc_sc_pop_t *sc_named_pop(qc_scenario_t *sc, unsigned host,
                                 int premium, qc_sc_model_t model,
                                 unsigned clients, double think,
                                 double bytes)
{
    qc_sc_pop_t *p = &sc->pops[sc->npops++];

    memset(p, 0, sizeof(*p));
    p->host = host;
    p->premium = premium;
    p->model = model;
    p->clients = clients;
    p->addresses = clients ? clients : 1;
    p->think = think;
    p->bytes = bytes;
    p->timeout = SC_TIMEOUT;
    p->load = model == QC_SC_CLOSED ? 1e9 : 0.0;
    return p;
}

int qc_scenario_named(qc_scenario_t *sc, const char *name)
{
    qc_sc_pop_t *p;

    memset(sc, 0, sizeof(*sc));
    sc->name = name;
    sc->kind = QC_SC_LINK;
    sc->shape = QC_SC_STEP;
    sc->period = 1.0;
    sc->bound = 0.9;
    sc->prior = 1.0;
    sc->light = SC_LIGHT;
    sc->t_load = 5.0;
    sc->duration = 25.0;
    sc->t_end = sc->duration;
    if (strcmp(name, "scraper") == 0) {
        /* QosCtlGuarantee 50 13.5Mbit and 100 27Mbit, each offered a
         * paced 50 and 100 req/s of a 32 KB image */
        sc->nhosts = 3;
        sc->hosts[1].guaranteed = sc->hosts[2].guaranteed = 1;
        sc->hosts[1].rmax = 50.0;
        sc->hosts[1].wmax = 13.5e6 / 8.0;
        sc->hosts[2].rmax = 100.0;
        sc->hosts[2].wmax = 27e6 / 8.0;
        sc_named_pop(sc, 0, 0, QC_SC_CLOSED, 200, 0.0, 32768.0);
        p = sc_named_pop(sc, 1, 0, QC_SC_OPEN, 0, 0.0, 32768.0);
        p->load = 50.0 * sc_link_cost(32768.0);
        p = sc_named_pop(sc, 2, 0, QC_SC_OPEN, 0, 0.0, 32768.0);
        p->load = 100.0 * sc_link_cost(32768.0);
        return 0;
    }
    if (strcmp(name, "one-size") == 0) {
        /* QosCtlGuarantee 1000 60Mbit, QosCtlPremiumAddress for ten
         * browsers, a basic scraper on the same host */
        sc->nhosts = 1;
        sc->hosts[0].guaranteed = 1;
        sc->hosts[0].premium_list = 1;
        sc->hosts[0].rmax = 1000.0;
        sc->hosts[0].wmax = 60e6 / 8.0;
        p = sc_named_pop(sc, 0, 1, QC_SC_BROWSER, 10, 0.5, 65536.0);
        p->objects = 10;
        p->load = 10.0 * 11.0 * sc_link_cost(65536.0)
                  / (0.5 + 11.0 * sc_link_cost(65536.0));
        sc_named_pop(sc, 0, 0, QC_SC_CLOSED, 200, 0.0, 65536.0);
        return 0;
    }
    if (strcmp(name, "browsers") == 0) {
        sc->period = 0.5;
        sc->nhosts = 1;
        p = sc_named_pop(sc, 0, 0, QC_SC_BROWSER, 150, 0.5, 65536.0);
        p->objects = 10;
        p->load = 150.0 * 11.0 * sc_link_cost(65536.0)
                  / (0.5 + 11.0 * sc_link_cost(65536.0));
        return 0;
    }
    return -1;
}

double qc_scenario_shape(const qc_scenario_t *sc, double t)
{
    if (t < sc->t_load) {
        return -1.0;            /* light */
    }
    if (sc->shape == QC_SC_RAMP) {
        double span = 0.5 * (sc->duration - sc->t_load);

        return fmin(0.25 + 0.75 * (t - sc->t_load) / span, 1.0);
    }
    if (sc->shape == QC_SC_FLASH && t >= sc->t_end) {
        return -1.0;
    }
    return 1.0;
}

const char *qc_scenario_kind_name(qc_sc_kind_t k)
{
    static const char *n[] = { "link", "cgi", "php", "cpu-static" };

    return k < QC_SC_NKINDS ? n[k] : "?";
}

const char *qc_scenario_model_name(qc_sc_model_t m)
{
    static const char *n[] = { "open", "closed", "think", "keepalive",
                               "h2", "retry", "browser" };

    return m < QC_SC_NMODELS ? n[m] : "?";
}

const char *qc_scenario_shape_name(qc_sc_shape_t s)
{
    static const char *n[] = { "step", "ramp", "flash", "cold",
                               "background" };

    return s < QC_SC_NSHAPES ? n[s] : "?";
}

#define SC_PUT(...) do { \
        int r_ = snprintf(buf + (used < len ? used : len), \
                          used < len ? len - used : 0, __VA_ARGS__); \
        used += r_ > 0 ? (size_t)r_ : 0; \
    } while (0)

size_t qc_scenario_json(const qc_scenario_t *sc, char *buf, size_t len)
{
    size_t used = 0;
    unsigned i;

    if (sc->name) {
        SC_PUT("{\"name\":\"%s\",", sc->name);
    }
    else {
        SC_PUT("{");
    }
    SC_PUT("\"seed\":%llu,\"kind\":\"%s\",\"shape\":\"%s\","
           "\"period\":%.3f,\"bound\":%.3f,\"prior\":%g,"
           "\"background\":%.3f,\"duration\":%.1f,\"t_load\":%.1f,"
           "\"t_end\":%.1f,\"light\":%.2f,\"bounded_queue\":%s,\"hosts\":[",
           (unsigned long long)sc->seed, qc_scenario_kind_name(sc->kind),
           qc_scenario_shape_name(sc->shape), sc->period, sc->bound,
           sc->prior, sc->background, sc->duration, sc->t_load, sc->t_end,
           sc->light, sc->bounded_queue ? "true" : "false");
    for (i = 0; i < sc->nhosts; i++) {
        SC_PUT("%s{\"guaranteed\":%s,\"rmax_share\":%.4f,\"rmax\":%g,"
               "\"wmax\":%g,\"premium\":%s}",
               i ? "," : "", sc->hosts[i].guaranteed ? "true" : "false",
               sc->hosts[i].rmax_share, sc->hosts[i].rmax,
               sc->hosts[i].wmax,
               sc->hosts[i].premium_list ? "true" : "false");
    }
    SC_PUT("],\"pops\":[");
    for (i = 0; i < sc->npops; i++) {
        const qc_sc_pop_t *p = &sc->pops[i];

        SC_PUT("%s{\"host\":%u,\"premium\":%s,\"model\":\"%s\","
               "\"load\":%.4g,\"clients\":%u,\"addresses\":%u,"
               "\"think\":%.3f,\"objects\":%u,\"timeout\":%.1f,"
               "\"bytes\":%g}",
               i ? "," : "", p->host, p->premium ? "true" : "false",
               qc_scenario_model_name(p->model),
               p->model == QC_SC_CLOSED ? -1.0 : p->load, p->clients,
               p->addresses, p->think, p->objects, p->timeout, p->bytes);
    }
    SC_PUT("]}");
    return used;
}
