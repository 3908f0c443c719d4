/* plan_note.h: what a memory planner chose, as the run's report says it.
 * A plain struct of its own so that the job layer's job can hold one without the
 * whole report interface (job/job.h includes this, report.h too). */
#ifndef PG_REPORT_PLAN_NOTE_H
#define PG_REPORT_PLAN_NOTE_H

/* What a memory planner (offload=plan) chose, for the run's report: JSON
 * `plan` ({kind, feasible, chosen, candidates, reason}), the text's `plan`
 * line.  kind NULL: no planner ran (JSON null, no line). */
typedef struct report_plan_note {
    const char *kind;              /* "offload=plan" */
    int feasible;                  /* some candidate plan fits the capacity */
    int candidates;                /* plans judged */
    char chosen[96];               /* the plan run: its candidate name and solver */
    char reason[256];              /* feasible = 0: why nothing fits */
} report_plan_note;

#endif
