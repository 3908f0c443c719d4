/* sgshim.h: the two things pipegrid needs from SimGrid's C++ API.
 * SimGrid reports platform errors by throwing C++ exceptions; from C they
 * would abort the process.  The shim catches them so a bad platform is an
 * input error (exit 2) with SimGrid's own message. */
#ifndef PG_SIM_SGSHIM_H
#define PG_SIM_SGSHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success; -1 with SimGrid's message in err. */
int sgx_load_platform(const char *path, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
