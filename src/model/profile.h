/* profile.h: the measured profiles (profile.c): a profile YAML read and cut
 * into the stages of a workload (workload_types.h); workload_build
 * (workload.h) adapts it to the experiment.
 */
#ifndef PG_MODEL_PROFILE_H
#define PG_MODEL_PROFILE_H

#include "model/workload_types.h"
#include "util/error.h"

/* Load a profile YAML (profiles/NAME.yaml) and cut it into nstages stages
 * (evenly by layers, or by the profile's explicit split if it has one for
 * that count).  Errors name file, line and key. */
int workload_load_profile(const char *path, int nstages, workload *w, pg_status *st);

#endif
