// Edit a service's configuration: the create form, filled with what the service has now.
// Only the fields the person changed are sent (the contract's PATCH keeps what is absent);
// a field emptied is sent as null, which returns it to the API's default. The detail page
// then follows the rollout until the service is at rest.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation, useQuery } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { ErrorNote, Loading, NeedsWriteRole } from '../ui.tsx';
import { FORM_KEYS, PARSERS, ServiceForm, type Form } from './service-form.tsx';
import { SERVICE, type Service } from './service-types.ts';

type PatchBody = paths[typeof SERVICE]['patch']['requestBody']['content']['application/json'];

const shown = (v: string | number | null | undefined): string => (v === null || v === undefined ? '' : String(v));

/** The form as the service is now. */
export function formOf(s: Service): Form {
  return {
    name: s.name,
    service_type: s.service_type,
    instance_type: s.instance_type,
    deployment_mode: s.deployment_mode,
    image: shown(s.image),
    port: shown(s.port),
    health_check_path: shown(s.health_check_path),
    min_replicas: shown(s.min_replicas),
    max_replicas: shown(s.max_replicas),
    cron_schedule: shown(s.cron_schedule),
    disk_size_gb: shown(s.disk_size_gb),
    disk_mount_path: shown(s.disk_mount_path),
    command: (s.command ?? []).join('\n'),
    args: (s.args ?? []).join('\n'),
    run_as_user: shown(s.run_as_user),
    idle_timeout_seconds: shown(s.idle_timeout_seconds),
    target_concurrency: shown(s.target_concurrency),
  };
}

/** The fields that differ from `before`; an emptied one is null (back to the default). */
export function patchOf(before: Form, after: Form): PatchBody {
  const changed = FORM_KEYS.filter((k) => before[k] !== after[k]);
  return Object.fromEntries(changed.map((k) => [k, PARSERS[k](after[k]) ?? null])) as PatchBody;
}

export function EditServicePage({ id }: { id: string }) {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const path = { workspaceID: workspaceId, vpcID: vpcId, serviceID: id };
  // Read once, not polled: the fields must not change under the person typing.
  const service = useQuery(`service-edit:${workspaceId}:${vpcId}:${id}`, () => unwrap(client.GET(SERVICE, { params: { path } })));
  const [f, setF] = useState<Form | null>(null);
  const before = service.data ? formOf(service.data) : null;
  const save = useMutation((body: PatchBody) => unwrap(client.PATCH(SERVICE, { params: { path }, body })));
  const detail = `/services/${encodeURIComponent(id)}`;
  if (!canWrite) {
    return <NeedsWriteRole title="Edit a service" doing="Editing a service" />;
  }
  return (
    <section aria-labelledby="edit-title">
      <p>
        <a href={detail}>← {service.data?.name ?? 'Service'}</a>
      </p>
      <h1 id="edit-title">Edit {service.data?.name ?? 'the service'}</h1>
      <ErrorNote error={service.error} />
      {!before ? (
        service.loading && <Loading what="the service" />
      ) : (
        <ServiceForm
          f={f ?? before}
          onChange={setF}
          err={save.error}
          nameFixed
          intro="Only the fields you change are sent; an emptied field goes back to the default shown beside it. A deployed service rolls out with the change."
          submit="Save changes"
          pending={save.pending && 'Saving…'}
          onSubmit={async () => {
            const body = patchOf(before, f ?? before);
            if (Object.keys(body).length === 0 || (await save.run(body))) navigate(detail);
          }}
        />
      )}
    </section>
  );
}
