/* hfconfig.h: a Hugging Face config.json as an architecture (model/arch.h). */
#ifndef PG_MODEL_HFCONFIG_H
#define PG_MODEL_HFCONFIG_H
#include "model/arch.h"
#include "util/error.h"
int hfconfig_load(const char *path, arch *out, pg_status *st);
#endif
