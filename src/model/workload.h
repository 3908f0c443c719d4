/* workload.h: what one stage costs, per microbatch.
 *
 * A workload is the model cut into nstages stages (pp * v), each with its
 * measured (or modelled) times and memory.  Times are on the reference GPU
 * the profile was measured on (ref_speed_flops); the simulator scales them
 * by ref_speed / speed of the GPU that runs the stage.  ref_speed_flops == 0
 * means the times are absolute and never scaled (workload=uniform).
 *
 * Memory per stage follows the zero-bubble accounting: F stores act_b_bytes
 * (what B needs), B releases act_b_bytes - act_w_bytes, W releases the rest.
 *
 * One GPU's share.  A stage's bytes (activations, workspace), parameters and
 * fwd_flops are what ONE GPU of its tensor-parallel group holds and runs;
 * so are its times, except workload=uniform's, which are the whole group's
 * and which the simulator splits over the group (experiment_tp_share,
 * sim.h's split_compute).  boundary_bytes is the whole activation sent on,
 * tp_coll_bytes the whole activation of the tp collectives.
 *
 * Profiles are measured once, for one GPU at one micro batch size;
 * workload_build adapts them, in one place, to the experiment:
 *   - micro_batch_size (experiment.c defaults it to the profile's
 *     model.micro_batch_size): times, activation, attention-core,
 *     workspace and boundary bytes, and FLOPs scale linearly by
 *     micro_batch_size / the profile's (an approximation: a GPU is less
 *     efficient at small batches, so times of a smaller batch are optimistic);
 *   - tp: times, FLOPs, parameters, activation, attention-core and workspace
 *     bytes are divided by tp.  Exact for the sharded GEMMs and for Megatron
 *     with sequence parallelism (tp.sequence_parallel=true); without it each
 *     GPU also keeps the replicated LayerNorm and dropout activations
 *     (10sbh of a layer's 34sbh + 5as^2b, Korthikanti et al. 2022), which
 *     /tp leaves out, and the replicated LayerNorm parameters are divided too.
 */
#ifndef PG_MODEL_WORKLOAD_H
#define PG_MODEL_WORKLOAD_H

#include "model/experiment.h"
#include "model/workload_types.h"
#include "util/error.h"


/* Build the workload of experiment e cut into nstages stages (profiles
 * adapted to e's micro_batch_size and tp, above). */
int workload_build(const experiment *e, int nstages, workload *w, pg_status *st);

/* The NCCL communicators one rank of a tp x cp x dp x ep x pp job holds: one
 * per group of more than one GPU that the rank runs collectives in (tp; cp;
 * the data-parallel reduction over dp x cp; ep), and one per pipeline
 * neighbour it sends to or receives from (PyTorch opens a communicator per
 * pair of ranks for point-to-point: 1 at pp = 2, 2 beyond). */
int workload_nccl_communicators(int tp, int cp, int dp, int ep, int pp);


#endif
