/* fuzz_yaml.c: libFuzzer harness for the YAML loader and the experiment layer.
 *
 * Any byte string goes through yt_load_buffer, then config flattening and the
 * typed experiment; the only acceptable outcomes are success or PG_EXIT_INPUT
 * with a "LABEL:LINE: " message.  Anything else (a crash, a sanitizer report,
 * another exit code, a message without a line) aborts, which libFuzzer
 * records as a finding.  Build and run: tests/fuzz/run.sh (needs clang);
 * fuzz_replay.c runs the same function over the corpus in the normal suite.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/experiment.h"
#include "util/yamltree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_LABEL "fuzz.yaml"

static void require(int ok, const char *what, const pg_status *st)
{
    if (!ok) {
        fprintf(stderr, "fuzz_yaml: %s (code %d: %s)\n", what, st->code, st->msg);
        abort();
    }
}

/* An input error must say where: "fuzz.yaml:LINE: ..." with LINE >= 1, or
 * for values from --set-like sources, a label; here everything comes from
 * the buffer, so a line is always expected except for whole-document errors. */
static void require_located(const pg_status *st)
{
    int line = 0;
    require(st->code == PG_EXIT_INPUT, "unexpected exit code", st);
    require(sscanf(st->msg, FUZZ_LABEL ":%d: ", &line) == 1 && line >= 1, "error without a line", st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pg_status st;
    pg_status_clear(&st);

    yt_doc doc;
    int rc = yt_load_buffer((const char *)data, size, FUZZ_LABEL, &doc, &st);
    if (rc != 0)
        require_located(&st);
    else
        require(doc.file != NULL, "no file label", &st);
    yt_free(&doc);

    config c;
    config_init(&c);
    pg_status_clear(&st);
    rc = config_load_buffer(&c, (const char *)data, size, FUZZ_LABEL, &st);
    if (rc != 0) {
        require_located(&st);
    } else {
        experiment e;
        rc = experiment_from_config(&c, &e, &st);
        if (rc != 0)
            require_located(&st);
    }
    config_free(&c);
    return 0;
}
