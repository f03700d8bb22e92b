// Create a service: every field of the contract's create, each with the default the API
// applies when it is left empty. Only what the person filled in is sent, so the API's own
// defaults and rules decide; its 400 shows under the field it names.
import { useState } from 'preact/hooks';
import { unwrap, type paths } from '../api.ts';
import { useMutation } from '../data.ts';
import { navigate } from '../router.ts';
import { useSession } from '../session.ts';
import { NeedsWriteRole } from '../ui.tsx';
import { EMPTY, FORM_KEYS, PARSERS, ServiceForm, type Form } from './service-form.tsx';

const SERVICES = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services' as const;
type CreateBody = paths[typeof SERVICES]['post']['requestBody']['content']['application/json'];

/** Only the fields filled in: the API's defaults decide the rest. */
function bodyOf(f: Form): CreateBody {
  return Object.fromEntries(FORM_KEYS.map((k) => [k, PARSERS[k](f[k])]).filter(([, v]) => v !== undefined)) as CreateBody;
}

export function CreateServicePage() {
  const { client, workspaceId, vpcId, canWrite } = useSession();
  const [f, setF] = useState<Form>(EMPTY);
  const create = useMutation((body: CreateBody) => unwrap(client.POST(SERVICES, { params: { path: { workspaceID: workspaceId, vpcID: vpcId } }, body })));
  if (!canWrite) {
    return <NeedsWriteRole title="Create a service" doing="Creating a service" />;
  }
  return (
    <section aria-labelledby="create-title">
      <p>
        <a href="/services">← Services</a>
      </p>
      <h1 id="create-title">Create a service</h1>
      <ServiceForm
        f={f}
        onChange={setF}
        err={create.error}
        intro="Empty fields take the default shown beside them."
        submit="Create service"
        pending={create.pending && 'Creating…'}
        onSubmit={async () => {
          const created = (await create.run(bodyOf(f)))?.value;
          if (created) navigate(`/services/${encodeURIComponent(created.id)}`);
        }}
      />
    </section>
  );
}
