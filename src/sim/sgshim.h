/* sgshim.h: the things pipegrid needs from SimGrid's C++ API.
 * SimGrid reports platform errors by throwing C++ exceptions; from C they
 * would abort the process.  The shim catches them so a bad platform is an
 * input error (exit 2) with SimGrid's own message.  SimGrid 3.32's C API
 * has only a blocking one-sided transfer; collectives (collectives.c) start
 * several at once and wait for them all, which needs the asynchronous one. */
#ifndef PG_SIM_SGSHIM_H
#define PG_SIM_SGSHIM_H

#include <simgrid/forward.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 on success; -1 with SimGrid's message in err. */
int sgx_load_platform(const char *path, char *err, size_t err_len);

/* Check that every ordered pair of the n distinct hosts has a route, and
 * each host to and from cpu_of[i] (its host memory; cpu_of or an entry may
 * be NULL).  0 if so; -1 with the first missing pair's indices in
 * *bad_a, *bad_b and a message in err.  Call after sgx_load_platform.
 * Quadratic in n: meant for hand-written platforms (generated ones route
 * every pair by construction). */
int sgx_check_routes(const char *const *hosts, int n, const char *const *cpu_of, int *bad_a, int *bad_b,
                     char *err, size_t err_len);

/* A one-sided transfer of bytes from one host to another, started now; the
 * handle holds one reference, consumed by sg_comm_wait / sg_comm_wait_all
 * like a mailbox comm's. */
sg_comm_t sgx_sendto_async(sg_host_t from, sg_host_t to, double bytes);

/* Take the next message of a mailbox (waiting for it if needed) and tell
 * when its transfer started and finished: SimGrid knows, the C API does not
 * say.  Returns the payload. */
void *sgx_mailbox_get_timed(sg_mailbox_t mailbox, double *start_s, double *finish_s);

/* The engine without actors (eventreplay.c).  Everything below runs in
 * SimGrid's maestro, with no actor: sgx_at runs fn(arg) at a simulated date
 * (a kernel timer); sgx_transfer starts a one-sided transfer of bytes over
 * the platform's route from one host to another (the network model and its
 * contention are SimGrid's) and, once it has ended, runs done(arg, start,
 * finish) at its finish date, outside the network model's update.  Call
 * sgx_events_init once after the platform is loaded and before any of them;
 * sgx_events_free after simgrid_run. */
typedef void (*sgx_fn)(void *arg);
typedef void (*sgx_done_fn)(void *arg, double start_s, double finish_s);
void sgx_events_init(void);
void sgx_at(double date_s, sgx_fn fn, void *arg);
void sgx_transfer(sg_host_t from, sg_host_t to, double bytes, sgx_done_fn done, void *arg);
void sgx_events_free(void);

#ifdef __cplusplus
}
#endif

#endif
