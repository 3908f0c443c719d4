/* deadlock.c: naming the blocked ops of a run that stalls
 * (engine_internal.h).
 *
 * Completion.  Every executed op is counted.  If the simulation ends with
 * ops left (SimGrid detects that every actor is blocked and stops), the run
 * is a deadlock and each blocked rank's next op is named.
 */
#include "sim/engine_internal.h"
#include "util/strbuf.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_deadlock, pg_engine, "naming the blocked ops of a run that stalls");

void eng_describe_blocked(sim_outcome *out)
{
    const schedule *s = eng.in->sched;
    strbuf sb;
    sb_init(&sb);
    char op_text[64], pred_text[64];
    for (int r = 0; r < s->pp; r++) {
        rank_state *rs = &eng.rep[0].ranks[r];
        if (rs->next >= s->nops[r])
            continue;
        sched_op op = s->ops[r][rs->next];
        sched_op_str(op, op_text, sizeof op_text);
        sched_op_str(rs->blocked_pred, pred_text, sizeof pred_text);
        sb_appendf(&sb, "%srank %d blocked at %s waiting for %s%s", sb.len ? "; " : "", r, op_text, pred_text,
                   rs->blocked_on_local ? " (later in its own list)" : "");
    }
    XBT_DEBUG("blocked: %s", sb.len ? sb.data : "(none)");
    snprintf(out->blocked, sizeof out->blocked, "%s", sb.len ? sb.data : "");
    sb_free(&sb);
}
