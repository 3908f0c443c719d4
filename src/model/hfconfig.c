/* hfconfig.c: PLACEHOLDER until the Hugging Face reader lands (branch hf):
 * workload=hf:PATH is refused with exit 2 so that nothing runs on a model
 * that was not read. */
#include "model/hfconfig.h"

int hfconfig_load(const char *path, arch *out, pg_status *st)
{
    (void)out;
    return pg_fail(st, PG_EXIT_INPUT, "%s: reading Hugging Face configs is not built yet", path);
}
