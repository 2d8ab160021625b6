/* Licensed under the Apache License, Version 2.0. */

/*
 * qosctl-scenario SEED [COUNT]: the JSON of the scenario of each seed
 * from SEED, one a line, for bench/scenarios; "-" for a fresh seed
 * (printed in the JSON, so the run reproduces).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qc_scenario.h"

int main(int argc, char **argv)
{
    unsigned long long seed, count = 1, i;
    char *end, buf[4096];
    qc_scenario_t sc;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: qosctl-scenario SEED|- [COUNT]\n");
        return 2;
    }
    if (strcmp(argv[1], "-") == 0) {
        seed = (unsigned long long)time(NULL) * 2654435761ULL
               ^ (unsigned long long)getpid();
    }
    else {
        errno = 0;
        seed = strtoull(argv[1], &end, 10);
        if (errno || *end || end == argv[1]) {
            fprintf(stderr, "qosctl-scenario: bad seed: %s\n", argv[1]);
            return 2;
        }
    }
    if (argc == 3) {
        errno = 0;
        count = strtoull(argv[2], &end, 10);
        if (errno || *end || count == 0 || count > 100000) {
            fprintf(stderr, "qosctl-scenario: bad count: %s\n", argv[2]);
            return 2;
        }
    }
    for (i = 0; i < count; i++) {
        qc_scenario_make(&sc, seed + i);
        if (qc_scenario_json(&sc, buf, sizeof(buf)) >= sizeof(buf)) {
            fprintf(stderr, "qosctl-scenario: seed %llu too long\n",
                    seed + i);
            return 1;
        }
        puts(buf);
    }
    return 0;
}
