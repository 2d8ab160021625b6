/* Licensed under the Apache License, Version 2.0. */

/*
 * The actuator's arithmetic (paper §4.2), free of httpd: the controller
 * output m in [0, M] is split into I = floor(m) and F = m - I; a request
 * whose N is < F is served from tree I + 1, every other one from tree I.
 * Level 0 means rejection.  N is the keyed hash of the client, so a
 * client keeps its tree while m stays put.  Only where one hash would
 * put a large share of the load on one side of F (below one, and in the
 * buckets the controller marks as a heavy key's) is each request placed
 * on its own; above one, those requests are the class's balance, which
 * keeps the count sent to each tree what m asks for.
 */

#ifndef QC_LEVEL_H
#define QC_LEVEL_H

#include <stddef.h>
#include <stdint.h>

/* The most content trees a virtual host may declare. */
#define QC_MAX_TREES 8

/*
 * Fixed-point scale of m in shared memory: m is published as an unsigned
 * 32-bit integer so that one atomic read gives a consistent value.
 */
#define QC_LEVEL_ONE 65536u

/*
 * Buckets of N in [0, 1): the request path counts each class's requests
 * by the bucket of their client's N, so the controller sees when a few
 * keys carry much of the load (bucket_arrived, spread_mask in qc_shm.h).
 * At most 64: spread_mask has a bit per bucket.
 */
#define QC_BUCKETS 64

/* SipHash-2-4 of bytes under the 128-bit key (k0, k1). */
uint64_t qc_siphash24(uint64_t k0, uint64_t k1, const unsigned char *bytes,
                      size_t len);

/*
 * Uniform value N in [0, 1) from a client key (address bytes, or the
 * admin's QOSCTL_CLIENT) under a per-server random secret.  The same
 * secret and bytes always give the same N, in every process and across
 * graceful restarts, so a client keeps its tree while m stays put; a
 * client that does not know the secret cannot choose an address, port
 * or cookie that lands below a given F.
 */
double qc_hash_keyed(uint64_t secret, const unsigned char *bytes,
                     size_t len);

/* The bucket of N: floor(n * QC_BUCKETS), held to [0, QC_BUCKETS - 1]. */
unsigned qc_hash_bucket(double n);

/* The golden ratio's fractional part: its multiples mod 1 are the most
 * evenly spread sequence there is (three-distance theorem). */
#define QC_PHI_FRAC 0.6180339887498949
#define QC_PHI_FRAC32 0x9e3779b9u               /* the same * 2^32 */

/*
 * The seq-th per-request draw around a client's n: frac(n + seq * phi),
 * seq * phi taken in 32-bit fixed point.
 * Any run of k consecutive draws falls below F a fraction F of the time
 * to within O(log k / k), for every n, so even a single key splits
 * between the two trees in the proportion m asks for.
 */
double qc_draw_spread(double n, uint32_t seq);

/*
 * Tree level (0..M) for a client with hash n under controller output m.
 * m is clamped to [0, M]; M is at most QC_MAX_TREES (larger is clamped).
 * A NaN m gives M: a broken controller fails open, as if absent.
 */
unsigned qc_level_pick(double m, unsigned M, double n);

/* The same with m in QC_LEVEL_ONE fixed point (the shared-memory form). */
unsigned qc_level_pick_fx(unsigned m_fx, unsigned M, double n);

/*
 * The request path's rule: the tree for one request from a client with
 * hash n under m_fx.  Per request (a draw around n) below m = 1 and when
 * spread (the client's bucket is marked heavy); otherwise by n alone, so
 * that the client keeps its tree while m_fx stays put.  seq: this
 * request's place in its draw sequence, the count of requests its bucket
 * had before it (bucket_arrived in qc_shm.h), so that one key's requests
 * follow one sequence whichever thread serves them.
 */
unsigned qc_level_pick_request(unsigned m_fx, unsigned M, double n,
                               int spread, uint32_t seq);

/*
 * Which key carries a marked bucket, so that only its requests are split
 * and the bucket's other clients keep their trees by their hash: a
 * majority vote (Boyer and Moore) over the bucket's requests.  Returns
 * whether n is the candidate and leads the others by QC_VOTE_LEAD
 * requests, so that a light client's short burst at the start of a vote
 * does not have it split; the lead is held to QC_VOTE_MAX, so that a
 * new heavy key takes over within that many of its requests.  The
 * request path keeps a vote per bucket in each process, which every
 * request below the top level casts; threads racing on one only slow
 * it.
 */
typedef struct {
    volatile uint64_t key;      /* the bits of the candidate's n */
    volatile uint32_t count;    /* its lead */
} qc_vote_t;

#define QC_VOTE_LEAD 8
#define QC_VOTE_MAX 64

int qc_level_vote(qc_vote_t *v, double n);

/*
 * Adds delta to a class's balance and returns the value it had before:
 * an atomic add in the request path, a plain one in a simulation.
 */
typedef int64_t (*qc_balance_add_fn)(void *ctx, int64_t delta);

/*
 * qc_level_pick_request with the class's count kept: the balance owes
 * tree I + 1 share_fx's fraction (QC_LEVEL_ONE fixed point) of every
 * request and is paid QC_LEVEL_ONE by every request sent there.  A
 * spread request (a marked bucket's: a heavy key's, as a rule) is sent
 * up only while the balance is owed half a request or more; every other
 * request keeps its client's tree by n and pays in what it takes.  The
 * number of requests served from I + 1 then follows the share to within
 * what the spread requests can make up, and no client that keeps a tree
 * by its hash gives it up for the count.  share_fx: the level the loop
 * asks for (loop_fx in qc_shm.h) beside m_fx, its threshold; no balance
 * below m = 1, at an integral m, or when the two differ in I.
 */
unsigned qc_level_pick_balanced(unsigned m_fx, unsigned share_fx,
                                unsigned M, double n, int spread,
                                uint32_t seq, qc_balance_add_fn add,
                                void *ctx);

/*
 * What a request sent to level pays the balance (qc_level_pick_balanced),
 * for one whose tree was not picked there: a keep-alive connection's
 * kept tree.  Nothing where the balance does not run.
 */
void qc_level_pay(unsigned m_fx, unsigned share_fx, unsigned M,
                  unsigned level, qc_balance_add_fn add, void *ctx);

/*
 * Whether a client's keep-alive connection keeps the tree (level) it was
 * given at m0_fx, now that the level is m_fx.  A page is the requests
 * since the pick, or since a request after a pause of QC_KEEP_GAP
 * seconds or more: `run` of them so far, its first `age` seconds ago;
 * `gap`: seconds since the connection's last request.  Within a page
 * (gap < QC_KEEP_GAP) of at most QC_KEEP_RUN requests and QC_KEEP_AGE
 * seconds, whatever m does: the rest of a page that a step meets half
 * fetched (at the top too: the first request below it on a connection
 * that served one keeps the top, for that page only).  Else, a tree
 * below the top, while m moves no more than QC_KEEP_FX from m0 and the
 * tree is one of the two around m (at an integral m, the one tree), so
 * that a client's pages come from one tree however its requests fall
 * against the balance, the surge guard and the level's small moves.
 * Never below m = 1, where each request draws (a refused client's
 * retry has anyone's odds), nor at the top.  What a
 * kept connection holds back from the loop is at most QC_KEEP_FX of a
 * tree, or a page: a second of a client that never pauses.
 */
#define QC_KEEP_FX (QC_LEVEL_ONE / 10)
#define QC_KEEP_GAP 0.5
#define QC_KEEP_RUN 32
#define QC_KEEP_AGE 1.0

int qc_level_keeps(unsigned m0_fx, unsigned m_fx, unsigned M,
                   unsigned level, unsigned run, double age, double gap);

/* m <-> fixed point, rounded to nearest, clamped to [0, M], NaN -> M. */
unsigned qc_level_to_fx(double m, unsigned M);
double qc_level_from_fx(unsigned m_fx);

#endif /* QC_LEVEL_H */
