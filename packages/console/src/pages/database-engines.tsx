// What the installation's cluster offers each engine (GET /api/v1/database-engines): the
// create form's versions, defaults, instance types and bounds come from it, so it offers
// what provisioning accepts. When it cannot be read the form still works: the version is
// typed (empty: the cluster's default) and the API's message says why.
import { messageOf, unwrap, type paths, type PierClient } from '../api.ts';
import { useQuery } from '../data.ts';
import { Field } from '../ui.tsx';

export type EngineOffers = paths['/api/v1/database-engines']['get']['responses'][200]['content']['application/json'];
export type EngineOffer = EngineOffers['items'][number];
type Engine = EngineOffer['engine'];

// Read once per visit of the form: the offer changes only when the platform is reconfigured.
export const useEngineOffers = (client: PierClient) => useQuery('database-engines', () => unwrap(client.GET('/api/v1/database-engines')));

/** `min-max`, or the one value when they are equal. */
export const span = (b: { min: number; max: number }) => (b.min === b.max ? String(b.min) : `${b.min} to ${b.max}`);

/** The version on screen: the one chosen if the cluster offers it, else its default (a version typed before the offer came is not kept). */
export const shownVersion = (offer: EngineOffer, typed: string) => (offer.versions.includes(typed) ? typed : offer.default_version);

const unreadable = (error: unknown) => (error ? ` The versions it offers could not be read: ${messageOf(error)}` : '');

/**
 * The version of the chosen engine: a choice among the offered ones (the default preselected)
 * when the offer was read, else free text with the reason the offer is missing.
 */
export function VersionField(props: {
  engine: Engine;
  offer: EngineOffer | undefined;
  adapter: string | undefined;
  loading: boolean;
  offerError: unknown;
  value: string;
  onInput: (v: string) => void;
  error: unknown;
}) {
  const { offer } = props;
  const field = props.engine === 'postgresql' ? 'postgres_version' : 'mysql_version';
  const label = props.engine === 'postgresql' ? 'PostgreSQL version' : 'MySQL version';
  const hint = offer
    ? `${offer.server} on the ${props.adapter} cluster: ${offer.versions.join(', ')}; default ${offer.default_version}.`
    : props.loading
      ? 'Reading the versions this cluster offers…'
      : `Empty: the cluster’s default.${unreadable(props.offerError)}`;
  return (
    <Field name={field} id={`db-${field}`} label={label} error={props.error} hint={hint}>
      {(a) =>
        offer ? (
          <select {...a} value={shownVersion(offer, props.value)} onChange={(e) => props.onInput(e.currentTarget.value)}>
            {offer.versions.map((v) => (
              <option key={v} value={v}>
                {v}
                {v === offer.default_version ? ' (default)' : ''}
              </option>
            ))}
          </select>
        ) : (
          <input {...a} value={props.value} maxLength={20} placeholder="the cluster’s default" onInput={(e) => props.onInput(e.currentTarget.value)} />
        )
      }
    </Field>
  );
}
