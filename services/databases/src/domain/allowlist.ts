// The IP allowlist, pending first. Add: the rule is written `adding`, the cluster is given
// the set with it, then one transaction makes it `active` with its event; a failed call
// deletes the rule (503). Remove: the rule is marked `removing`, the cluster is given the
// set without it, then the row goes with its event; a failed call puts it back `active`.
// Lists show `active` rules and `removing` ones, which stay in force until the cluster
// has dropped them; an `adding` rule shows once it is in force.
import { UnavailableError, crashPoint, isUuid, type Page, type PageRequest } from '@pier/kit';
import type { AllowlistRule } from './database.ts';
import { normaliseCidr } from './cidr.ts';
import { mysqlHostOf } from './access.ts';
import { ruleNotFound } from './errors.ts';
import { events } from './events.ts';
import { activeCidrs, clusterView, convergeBack, findDatabase, findMutable, type DatabasesContext, type Scope } from './context.ts';

export async function listRules(ctx: DatabasesContext, scope: Scope, id: string, page: PageRequest): Promise<Page<AllowlistRule>> {
  const db = await findDatabase(ctx, scope, id);
  return ctx.store.rulePage(db.id, ['active', 'removing'], page);
}

export async function addRule(ctx: DatabasesContext, scope: Scope, id: string, cidrInput: string, description: string): Promise<AllowlistRule> {
  const found = await findMutable(ctx, scope, id);
  const cidr = normaliseCidr(cidrInput);
  if (found.engine === 'mysql') mysqlHostOf(cidr); // throws for what MySQL accounts cannot express
  return ctx.locks.run(found.id, async () => {
    const db = await findMutable(ctx, scope, id);
    const rule = await ctx.store.insertRule(db.id, cidr, description);
    const active = await activeCidrs(ctx, db.id);
    try {
      await ctx.cluster.apply(clusterView(db, [...active, cidr]));
    } catch (err) {
      await ctx.store.deleteRule(rule.id, 'adding');
      await convergeBack(ctx, db, active, err);
      throw err;
    }
    crashPoint('databases.allowlist.add.applied');
    const added = await ctx.store.transaction(async (tx) => {
      const activated = (await tx.setRuleState(rule.id, 'adding', 'active'))!;
      await tx.event(events.ruleAdded(db, activated));
      return activated;
    });
    ctx.eventsWritten();
    return added;
  });
}

export async function removeRule(ctx: DatabasesContext, scope: Scope, id: string, ruleId: string): Promise<void> {
  const found = await findMutable(ctx, scope, id);
  if (!isUuid(ruleId)) throw ruleNotFound();
  await ctx.locks.run(found.id, async () => {
    const db = await findMutable(ctx, scope, id);
    const rule = await ctx.store.rule(db.id, ruleId.toLowerCase());
    if (!rule || rule.state === 'adding') throw ruleNotFound();
    // A rule a crash left `removing` is still listed: removing it again finishes the job.
    if (rule.state === 'active') await ctx.store.setRuleState(rule.id, 'active', 'removing');
    const rest = await activeCidrs(ctx, db.id);
    try {
      await ctx.cluster.apply(clusterView(db, rest));
    } catch (err) {
      await ctx.store.setRuleState(rule.id, 'removing', 'active');
      await convergeBack(ctx, db, [...rest, rule.cidr], err);
      throw err;
    }
    crashPoint('databases.allowlist.remove.applied');
    await ctx.store.transaction(async (tx) => {
      if (await tx.deleteRule(rule.id, 'removing')) await tx.event(events.ruleRemoved(db, rule));
    });
    ctx.eventsWritten();
  });
}

/**
 * Settles the rules of one database that a crash left pending: the cluster is given the
 * `active` set, then `adding` rules are deleted (undone: the client never got a 201) and
 * `removing` ones are deleted with their event (finished: the client asked for it). If the
 * cluster refuses that set, a `removing` rule goes back to `active`, since it may still be
 * in force; an unreachable cluster leaves everything for the next pass.
 */
export async function settlePendingRules(ctx: DatabasesContext, databaseId: string): Promise<void> {
  const pending = await ctx.store.rules(databaseId, ['adding', 'removing']);
  if (pending.length === 0) return;
  const db = await ctx.store.byId(databaseId);
  // A change still pending is finished first; its apply carries the allowlist too.
  if (db?.pendingChange) return;
  let refused = false;
  if (db?.provisioned && db.status !== 'deleting') {
    try {
      await ctx.cluster.apply(clusterView(db, await activeCidrs(ctx, db.id)));
    } catch (err) {
      if (err instanceof UnavailableError) throw err;
      refused = true;
      ctx.log.warn({ err: String(err), id: db.id }, 'the cluster refused the allowlist while settling pending rules');
    }
  }
  await ctx.store.transaction(async (tx) => {
    for (const rule of pending) {
      if (rule.state === 'adding') await tx.deleteRule(rule.id, 'adding');
      else if (refused) await tx.setRuleState(rule.id, 'removing', 'active');
      else if ((await tx.deleteRule(rule.id, 'removing')) && db) await tx.event(events.ruleRemoved(db, rule));
    }
  });
  ctx.eventsWritten();
  ctx.log.info(
    { id: databaseId, undone: pending.filter((r) => r.state === 'adding').length, finished: pending.filter((r) => r.state === 'removing').length },
    'settled allowlist rules left pending',
  );
}
