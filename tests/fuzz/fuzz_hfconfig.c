/* fuzz_hfconfig.c: libFuzzer harness for the Hugging Face config.json reader.
 *
 * Any byte string goes through hfconfig_load_buffer; the only acceptable
 * outcomes are success (an arch that arch_check accepts, whose parameter and
 * FLOP counts are finite and positive) or PG_EXIT_INPUT with a message that
 * starts with the input's label.  Anything else aborts, which libFuzzer
 * records as a finding.  The normal suite replays the shipped models
 * (profiles/models/) through it (test_fuzz_hfconfig_replay); to fuzz, build
 * like tests/fuzz/run.sh builds fuzz_yaml, with this file, src/model/arch.c,
 * src/model/hfconfig.c, src/util/error.c and `pkg-config --libs jansson`.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/hfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_LABEL "fuzz.json"
#define FUZZ_SEQ 4096   /* any valid run: the counts below must be finite for it */

static void require(int ok, const char *what, const pg_status *st)
{
    if (!ok) {
        fprintf(stderr, "fuzz_hfconfig: %s (code %d: %s)\n", what, st->code, st->msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pg_status st;
    pg_status_clear(&st);
    arch a;
    int rc = hfconfig_load_buffer((const char *)data, size, FUZZ_LABEL, &a, &st);
    if (rc != 0) {
        require(rc == PG_EXIT_INPUT, "unexpected exit code", &st);
        require(strncmp(st.msg, FUZZ_LABEL, strlen(FUZZ_LABEL)) == 0, "message does not name the input", &st);
        return 0;
    }
    require(arch_check(&a, FUZZ_LABEL, &st) == 0, "loaded an arch that arch_check refuses", &st);
    arch_run r = {.seq = FUZZ_SEQ, .micro_batch = 1, .tp = 1, .cp = 1, .ep = 1, .flash = 1};
    double params = arch_params_total(&a), flops = arch_flops_per_sample(&a, &r);
    require(isfinite(params) && params > 0 && isfinite(flops) && flops > 0, "non-finite or empty counts", &st);
    return 0;
}
