/* fuzz_gpu.c: libFuzzer harness for the GPU type profiles (profiles/gpus/).
 *
 * Any byte string goes through gpu_params_load_buffer (the YAML loader, then
 * every parameter with its source, the host_link, kernel_queue and
 * layer_profiles blocks);
 * the only acceptable outcomes are success (every parameter finite and not
 * negative, ratios in (0, 1], a source for each, and a profile that writes
 * back to one that loads with the same values) or PG_EXIT_INPUT with a
 * message that starts with the input's label.  Anything else aborts, which
 * libFuzzer records as a finding.  The normal suite replays the shipped
 * profiles through it (test_fuzz_gpu_replay); to fuzz, build like
 * tests/fuzz/run.sh builds fuzz_yaml, with this file, src/model/gpu_params.c
 * and the util sources.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/costmodel.h"
#include "util/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_LABEL "fuzz.yaml"

static void require(int ok, const char *what, const pg_status *st)
{
    if (!ok) {
        fprintf(stderr, "fuzz_gpu: %s (code %d: %s)\n", what, st->code, st->msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pg_status st;
    pg_status_clear(&st);
    gpu_params g;
    int rc = gpu_params_load_buffer((const char *)data, size, FUZZ_LABEL, &g, &st);
    if (rc != 0) {
        require(rc == PG_EXIT_INPUT, "unexpected exit code", &st);
        require(strncmp(st.msg, FUZZ_LABEL, strlen(FUZZ_LABEL)) == 0, "error without the file", &st);
        return 0;
    }
    for (int k = 0; k < GP_COUNT; k++) {
        require(isfinite(g.v[k]) && g.v[k] >= 0, "parameter not finite or negative", &st);
        /* an optional parameter the file leaves out: no value, no source (costmodel.h gpu_param_absent) */
        require(g.source[k][0] != '\0' || gpu_param_absent(&g, (gpu_param_id)k), "parameter without a source", &st);
    }
    require(g.kernel_queue_source[0] != '\0', "kernel_queue without a source", &st);
    for (int k = 0; g.has_headroom && k < GH_COUNT; k++)
        require(isfinite(g.headroom[k]) && g.headroom[k] >= 0 && g.headroom_source[k][0] != '\0',
                "memory_headroom entry not finite, negative or without a source", &st);
    require(g.nlayer_profiles >= 0 && g.nlayer_profiles <= GP_MAX_LAYER_PROFILES, "layer profile count", &st);
    for (int i = 0; i < g.nlayer_profiles; i++)
        require(isfinite(g.layer_profile[i].factor) && g.layer_profile[i].factor > 0 && g.layer_profile[i].rows > 0 &&
                    g.layer_profile[i].key[0] != '\0',
                "layer profile not a positive factor of a named shape", &st);
    strbuf sb;
    sb_init(&sb);
    gpu_params_write_yaml(&g, "fuzz", &sb);
    gpu_params back;
    rc = gpu_params_load_buffer(sb.data, sb.len, FUZZ_LABEL, &back, &st);
    require(rc == 0, "written profile does not load", &st);
    for (int k = 0; k < GP_COUNT; k++)
        require(fabs(back.v[k] - g.v[k]) <= 1e-8 * fabs(g.v[k]), "written value differs", &st);
    require(back.host_waits_each_layer == g.host_waits_each_layer, "kernel_queue not written back", &st);
    require(back.nlayer_profiles == g.nlayer_profiles, "layer profiles not written back", &st);
    for (int i = 0; i < g.nlayer_profiles; i++)
        require(strcmp(back.layer_profile[i].key, g.layer_profile[i].key) == 0 &&
                    fabs(back.layer_profile[i].factor - g.layer_profile[i].factor) <= 1e-8 * g.layer_profile[i].factor &&
                    back.layer_profile[i].rows == g.layer_profile[i].rows,
                "written layer profile differs", &st);
    sb_free(&sb);
    return 0;
}
